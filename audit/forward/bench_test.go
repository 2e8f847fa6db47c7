package forward_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/store"
)

// BenchmarkShipRecord is the forwarder's work per record, off the call
// path: read it from the log, encode it, post it (OTLP/HTTP, batches of
// 500) to a collector that discards it. It is what a call's records cost
// the process beside the call, not in it.
func BenchmarkShipRecord(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	w := &writer{dir: b.TempDir()}
	st, err := store.Open(context.Background(), w.dir, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w.st = st
	t := &testing.T{}
	w.write(t, 2000, 0)
	sink, _ := forward.NewHTTP("otlp", srv.URL+"/v1/logs", nil, "", "state")
	r := store.NewLogReader(w.dir)
	defer r.Close()
	b.ReportAllocs()
	b.ResetTimer()
	var pos store.LogPosition
	for i := 0; i < b.N; {
		batch, err := r.Read(pos, min(500, b.N-i))
		if err != nil {
			b.Fatal(err)
		}
		if len(batch) == 0 {
			pos = store.LogPosition{}
			continue
		}
		if _, err := sink.Send(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
		pos = batch[len(batch)-1].Next
		i += len(batch)
	}
}
