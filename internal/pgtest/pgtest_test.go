package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// A fresh database answers; a private cluster stopped refuses and
// started again answers.
func TestCluster(t *testing.T) {
	ctx := context.Background()
	dsn := Shared(t).Database(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %d %v", one, err)
	}
	conn.Close(ctx)

	p := Private(t)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if c, err := pgx.Connect(ctx, p.DSN("postgres")); err == nil {
		c.Close(ctx)
		t.Fatal("a stopped cluster answered")
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	c.Close(ctx)
}
