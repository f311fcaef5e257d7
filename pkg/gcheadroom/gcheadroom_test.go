package gcheadroom

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	c := Config{Headroom: 64 << 20, MinPercent: 25}
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{32 << 20, 100},  // a small heap: Go's default
		{64 << 20, 100},  // headroom equals the heap
		{128 << 20, 50},  // 64 MiB over 128
		{256 << 20, 25},  // 64 MiB over 256
		{1024 << 20, 25}, // never below MinPercent
	} {
		if got := c.Percent(tc.live); got != tc.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
	if got := (Config{Headroom: 1, MinPercent: 500}).Percent(1 << 30); got != 100 {
		t.Errorf("a MinPercent above 100 gave %d, want 100", got)
	}
}

// gogc reads the runtime's current GOGC.
func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestStartFollowsTheLiveHeap: with a live heap eight times the headroom,
// collections set GOGC to the floor; stop restores 100. (Not parallel: GOGC
// is the process's.)
func TestStartFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	stop := Start(Config{Headroom: 8 << 20, MinPercent: 10})
	deadline := time.Now().Add(10 * time.Second)
	// 8 MiB over 64 MiB and the test binary's own few: 11 or 12.
	near := func(p int64) bool { return p >= 10 && p <= 12 }
	for !near(gogc()) && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := gogc(); !near(got) {
		t.Fatalf("GOGC with 64 MiB live and 8 MiB of headroom = %d, want about 12", got)
	}
	runtime.KeepAlive(live)
	stop()
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC after stop = %d, want 100", got)
	}
}

// TestStartLeavesAnOperatorsGOGC: GOGC in the environment wins.
func TestStartLeavesAnOperatorsGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	big := make([]byte, 64<<20)
	stop := Start(Config{Headroom: 1 << 20, MinPercent: 10})
	defer stop()
	runtime.GC()
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC with GOGC=100 in the environment = %d, want 100", got)
	}
	runtime.KeepAlive(big)
}
