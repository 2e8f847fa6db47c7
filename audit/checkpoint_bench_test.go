package audit

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/store"
)

// BenchmarkVerifyCheckpoints is `audit verify --key`'s part after the
// chain check, per record of a bbolt state's log (20,000 records, a
// checkpoint every 2,000): both walks of the log and the signatures.
// `audit seal --key` pays it, and the chain check, before it signs.
func BenchmarkVerifyCheckpoints(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	const n, every = 20_000, 2_000
	at := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += every {
		recs := make([]store.Record, every)
		for j := range recs {
			recs[j] = store.Record{Time: at, Kind: "decision", Principal: "claude", Operation: "fs_read_file", Decision: "allow"}
		}
		if err := store.AppendRecords(ctx, st, recs...); err != nil {
			b.Fatal(err)
		}
		if _, _, err := Seal(ctx, st, key, "operator", "host/1", at); err != nil {
			b.Fatal(err)
		}
	}
	pub := key.Public().(ed25519.PublicKey)
	b.ResetTimer()
	for range b.N {
		got, err := VerifyCheckpoints(pub, StateRecords(st))
		if err != nil || len(got.Verified) != n/every {
			b.Fatal(len(got.Verified), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
}
