package pgstate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/pgtest"
)

// What waiting can cure (a server that is down) is Unreachable; what it
// cannot (a database that does not exist) is not.
func TestUnreachable(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Private(t)
	dsn := c.Database(t)
	missing := strings.Replace(dsn, "dbname=", "dbname=nosuch", 1)
	_, err := Open(ctx, Options{DSN: missing, Timeout: time.Second})
	if err == nil || Unreachable(err) {
		t.Errorf("a database that does not exist: %v, Unreachable %v", err, Unreachable(err))
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, Options{DSN: dsn, Timeout: time.Second})
	if err == nil || !Unreachable(err) {
		t.Errorf("a server that is down: %v, Unreachable %v", err, Unreachable(err))
	}
}
