// Command otlpsink is an OTLP/HTTP endpoint that takes what it is sent
// and keeps nothing but counts: the other end of a benchmark's traces
// (bench/watch-compare.sh). It prints the counts when it is stopped.
//
//	otlpsink -listen 127.0.0.1:4318
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:4318", "address to listen on")
	flag.Parse()
	var requests, bytes atomic.Int64
	http.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		requests.Add(1)
		bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	})
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-stop
		fmt.Fprintf(os.Stderr, "otlpsink: %d requests, %d bytes\n", requests.Load(), bytes.Load())
		os.Exit(0)
	}()
	if err := http.ListenAndServe(*listen, nil); err != nil {
		fmt.Fprintln(os.Stderr, "otlpsink:", err)
		os.Exit(1)
	}
}
