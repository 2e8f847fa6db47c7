package store

import (
	"context"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The durable audit write per call, and what opening the file per
// transaction (so a second aqlguard process can use it) costs against
// keeping it open. Run with:
//
//	go test -run '^$' -bench . -benchmem ./store/
//
// "shipped" is Store.Update with one Append, as every decision does.
// "held-open" is the same bbolt transaction on a database kept open (what
// a single-process design would do): the difference is the two-process
// cost. "held-open-nosync" drops the fsync too, to show its share.
func BenchmarkAuditAppend(b *testing.B) {
	rec := Record{Time: time.Now(), Kind: "decision", Principal: "bench", Session: "s", Process: "host/1",
		Server: "ev", Operation: "ev_echo", ArgsSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		Preview: `{"message":"hello"}`, Decision: "allow", Stage: "pattern", Tier: "advisory", Risk: 10,
		Factors: []string{"auto_approve: *"}, DurationMS: 0.1}
	ctx := context.Background()
	b.Run("shipped", func(b *testing.B) {
		s, err := Open(ctx, b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := s.Append(ctx, rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("shipped-parallel", func(b *testing.B) {
		s, err := Open(ctx, b.TempDir(), Options{Timeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := s.Append(ctx, rec); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	for _, nosync := range []bool{false, true} {
		name := "held-open"
		if nosync {
			name += "-nosync"
		}
		b.Run(name, func(b *testing.B) {
			s, err := Open(ctx, b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			db, err := bolt.Open(s.Path(), 0o600, &bolt.Options{NoSync: nosync})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			for b.Loop() {
				if err := db.Update(func(btx *bolt.Tx) error { _, err := (&Tx{tx: btx}).Append(rec); return err }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("view", func(b *testing.B) {
		s, err := Open(ctx, b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := s.View(ctx, func(tx *Tx) error { _, err := tx.Block("bench"); return err }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
