// Package coldcache is what the cold-cache benchmarks of the result scan
// share (flows, secrets, injection; bench/RESULTS.md (ai), (ak)): the
// serving process finds its caches cold between calls, where a benchmark
// loop keeps them warm and shows a quarter of the cost.
package coldcache

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// buf is larger than the last-level caches of the machines we measure
// on: 16 MiB left cold at 1.3 times warm on the 2-core EPYC, 64 MiB gives
// the 4 times the serving process shows. Allocated on first use.
var buf = sync.OnceValue(func() []byte { return make([]byte, 64<<20) })

// Evict writes one byte per cache line of buf, pushing the tables and
// code of the previous call out of the caches. Call it with the
// benchmark's timer stopped.
func Evict() {
	b := buf()
	for i := 0; i < len(b); i += 64 {
		b[i]++ // a store to a heap buffer: not optimised away
	}
}

// NetHTTP1KiB is the text of (ah)-(ak)'s 1 KiB result: the first KiB of
// Go's net/http package comment (src/net/http/doc.go), read from $GOROOT
// or the go command's GOROOT (a run under valgrind sets GOROOT: it
// cannot follow a child process).
func NetHTTP1KiB() (string, error) {
	root := os.Getenv("GOROOT")
	if root == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			return "", fmt.Errorf("go env GOROOT: %w", err)
		}
		root = strings.TrimSpace(string(out))
	}
	src, err := os.ReadFile(filepath.Join(root, "src", "net", "http", "doc.go"))
	if err != nil {
		return "", err
	}
	if len(src) < 1024 {
		return "", fmt.Errorf("net/http/doc.go holds %d bytes, not a KiB", len(src))
	}
	return string(src[:1024]), nil
}
