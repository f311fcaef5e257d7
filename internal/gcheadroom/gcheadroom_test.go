package gcheadroom

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

func TestPercent(t *testing.T) {
	c := Config{Headroom: 64 << 20, Interval: 2 * time.Second, MinPercent: 25}
	for _, tc := range []struct {
		live uint64
		rate float64
		want int
	}{
		{0, 0, 100},
		{32 << 20, 0, 100},            // a small heap: Go's default
		{64 << 20, 0, 100},            // the headroom equals the heap
		{128 << 20, 0, 50},            // 64 MiB over 128
		{256 << 20, 1 << 20, 25},      // 64 MiB over 256: idle
		{256 << 20, 64 << 20, 50},     // two seconds of 64 MiB/s over 256
		{256 << 20, 1 << 30, 100},     // busy: as at GOGC=100
		{1024 << 20, 0, 25},           // never below MinPercent
		{1024 << 20, 256 << 20, 50},   // 512 MiB over 1 GiB
		{1024 << 20, 1024 << 20, 100}, // never above 100
	} {
		if got := c.Percent(tc.live, tc.rate); got != tc.want {
			t.Errorf("Percent(%d MiB live, %.0f MiB/s) = %d, want %d", tc.live>>20, tc.rate/(1<<20), got, tc.want)
		}
	}
	if got := (Config{Headroom: 1, MinPercent: 500}).Percent(1<<30, 0); got != 100 {
		t.Errorf("a MinPercent above 100 gave %d, want 100", got)
	}
}

// gogc reads the runtime's current GOGC.
func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// waitGOGC collects garbage (so the live heap is known) and, while busy,
// allocates, until GOGC is within [lo, hi]; after 10 s it fails t, saying
// what GOGC was expected while idle or busy.
func waitGOGC(t *testing.T, lo, hi int64, busy bool, what string) {
	t.Helper()
	var sink []byte
	poll.Until(t, 10*time.Millisecond, 10*time.Second, func() error {
		if p := gogc(); p >= lo && p <= hi {
			return nil
		}
		runtime.GC()
		for start := time.Now(); busy && time.Since(start) < 50*time.Millisecond; {
			sink = make([]byte, 1<<20)
		}
		return fmt.Errorf("GOGC %s = %d, want %d to %d", what, gogc(), lo, hi)
	})
	runtime.KeepAlive(sink)
}

// TestStartFollowsTheLiveHeapAndTheLoad: with a live heap eight times the
// headroom, an idle program gets GOGC near the headroom's share of it, a
// busy one GOGC=100; stop restores 100. (Not parallel: GOGC is the
// process's.)
func TestStartFollowsTheLiveHeapAndTheLoad(t *testing.T) {
	t.Setenv("GOGC", "")
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	stop := Start(Config{Headroom: 8 << 20, Interval: time.Second, MinPercent: 10})
	defer stop()
	// 8 MiB over 64 MiB and the test binary's own few: 11 or 12.
	waitGOGC(t, 10, 12, false, "idle, with 64 MiB live and 8 MiB of headroom")
	waitGOGC(t, 100, 100, true, "while allocating hundreds of MiB a second")
	waitGOGC(t, 10, 12, false, "idle again")
	runtime.KeepAlive(live)
	stop()
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC after stop = %d, want 100", got)
	}
}

// TestStartLeavesAnOperatorsGOGC: GOGC in the environment wins. Start
// then keeps nothing: a Start that kept a headroom would set GOGC every
// tick and, when stopped, restore 100, so GOGC after stop is still the
// operator's 77 only if Start did nothing, however slow the machine.
func TestStartLeavesAnOperatorsGOGC(t *testing.T) {
	t.Setenv("GOGC", "77")
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	big := make([]byte, 64<<20)
	stop := Start(Config{Headroom: 1 << 20, Interval: time.Second, MinPercent: 10})
	runtime.GC()
	if got := gogc(); got != 77 {
		t.Fatalf("GOGC with GOGC=77 in the environment = %d, want 77", got)
	}
	stop()
	if got := gogc(); got != 77 {
		t.Fatalf("GOGC with GOGC=77 in the environment, after stop = %d, want 77", got)
	}
	runtime.KeepAlive(big)
}
