package app

import (
	"context"
	"testing"
	"time"
)

func TestHeadroomPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		live, headroom uint64
		want           int
	}{
		{0, 48 * mib, 2000},
		{1 * mib, 48 * mib, 2000}, // 20 times 1 MiB is less than 48 MiB
		{11 * mib, 48 * mib, 430}, // serve with 32 sessions: a collection every 48 MiB
		{24 * mib, 48 * mib, 200},
		{48 * mib, 48 * mib, 100},
		{400 * mib, 48 * mib, 100}, // Go's default once the heap is larger
		{47 * mib, 48 * mib, 100},  // 102% rounds down to the default
	} {
		got := headroomPercent(tt.live, tt.headroom)
		if got != tt.want {
			t.Errorf("live %d MiB, headroom %d MiB: GOGC %d, want %d", tt.live/mib, tt.headroom/mib, got, tt.want)
		}
		if grow := tt.live * uint64(got) / 100; got > 100 && grow > tt.headroom {
			t.Errorf("live %d MiB: GOGC %d lets the heap grow by %d MiB, more than the headroom", tt.live/mib, got, grow/mib)
		}
	}
}

// TestHeapHeadroomLeavesAnOperatorsGOGC: with GOGC set, HeapHeadroom
// changes nothing and returns at once.
func TestHeapHeadroomLeavesAnOperatorsGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	done := make(chan struct{})
	go func() { HeapHeadroom(context.Background(), ServeHeadroom); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("HeapHeadroom ran with GOGC set")
	}
}
