package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// The durable audit write per call. Run with:
//
//	go test -run '^$' -bench . -benchmem ./store/
//
// "bbolt-update" is what every record cost before the log had files of
// its own, and what a state change still costs: a transaction that
// opens the database, writes the record, commits with fsync and closes —
// the baseline, measured in the same run. "log-grouped" is Store.Append
// under SyncGrouped (one write; fsync within AuditSyncInterval),
// "log-always" under SyncAlways (one fsync before it returns, shared by
// the writers waiting at that moment: see the -parallel variants).
func BenchmarkAuditAppend(b *testing.B) {
	rec := Record{Time: time.Now(), Kind: "decision", Principal: "bench", Session: "s", Process: "host/1",
		Server: "ev", Operation: "ev_echo", ArgsSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		Preview: `{"message":"hello"}`, Decision: "allow", Stage: "pattern", Tier: "advisory", Risk: 10,
		Factors: []string{"auto_approve: *"}, DurationMS: 0.1}
	raw, _ := json.Marshal(rec)
	ctx := context.Background()
	open := func(b *testing.B, mode SyncMode) *Store {
		s, err := Open(ctx, b.TempDir(), Options{Timeout: time.Minute, AuditSync: mode})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		return s
	}
	b.Run("bbolt-update", func(b *testing.B) {
		s := open(b, SyncGrouped)
		for b.Loop() {
			if err := s.Update(ctx, func(tx *Tx) error { return tx.tx.Bucket(bucketMeta).Put([]byte("bench"), raw) }); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, mode := range []SyncMode{SyncGrouped, SyncAlways} {
		b.Run("log-"+string(mode), func(b *testing.B) {
			s := open(b, mode)
			for b.Loop() {
				if err := s.Append(ctx, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("log-"+string(mode)+"-parallel", func(b *testing.B) {
			s := open(b, mode)
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
	}
	b.Run("view", func(b *testing.B) {
		s := open(b, SyncGrouped)
		for b.Loop() {
			if err := s.View(ctx, func(tx *Tx) error { _, err := tx.Block("bench"); return err }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
