// Package gcheadroom sizes the Go garbage collector's headroom (how much
// the heap may grow between two collections) by how fast the program
// allocates, not as a share of the live heap.
//
// Go's default, GOGC=100, lets the heap grow by as much as is live before
// collecting again. Most of an API server's live heap is long-lived state
// (the handlers, storage, caches and informers of every resource and every
// CRD), while the garbage its requests make does not grow with the CRDs:
// with hundreds of CRDs, an idle server at GOGC=100 holds hundreds of MiB
// of RSS for garbage it makes slowly. Every second, Start sets GOGC so
// that the next collection starts once the larger of Config.Headroom and
// what the program allocates in Config.Interval has been allocated, never
// above 100 (a small heap, or a busy server, is collected as Go would) nor
// below Config.MinPercent. So an idle server with a large heap is collected
// at most about once an Interval, a busy one as at GOGC=100. Traded: an
// idle or lightly loaded server with a large heap spends more CPU marking
// it (at most one collection an Interval more than at GOGC=100).
//
// It is for a program's main (gcp's server commands), not for a library:
// GOGC is per process, so it is internal to this module. An operator's GOGC
// environment variable wins.
package gcheadroom

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"time"
)

// Config is the headroom Start keeps.
type Config struct {
	// Headroom is the least the heap may grow between two collections.
	Headroom uint64
	// Interval is how long the allocation a headroom allows for lasts:
	// the headroom is at least what the program allocates in Interval.
	Interval time.Duration
	// MinPercent is the lowest GOGC set, however large the live heap.
	MinPercent int
}

// Default returns gcp's servers' headroom: at least 32 MiB, and at least
// two seconds of allocation; GOGC=25 at the least. An idle `gcp start`
// allocates about 12 MiB a minute, so 32 MiB lasts it past the runtime's
// forced collection every two minutes: more headroom would only be RSS.
func Default() Config {
	return Config{Headroom: 32 << 20, Interval: 2 * time.Second, MinPercent: 25}
}

// maxPercent is Go's default GOGC, the highest Start sets.
const maxPercent = 100

// tick is how often Start measures the allocation rate and sets GOGC;
// window is how many ticks' rates it takes the highest of.
const (
	tick   = time.Second
	window = 5
)

// The runtime metrics Start reads: the heap the last collection marked,
// and the bytes allocated since the program started.
const (
	liveHeap  = "/gc/heap/live:bytes"
	allocated = "/gc/heap/allocs:bytes"
)

// Start keeps c's headroom until stop is called (which restores GOGC=100).
// With GOGC set in the environment it does nothing.
func Start(c Config) (stop func()) {
	if os.Getenv("GOGC") != "" || c.Headroom == 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { c.run(done) })
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			debug.SetGCPercent(maxPercent)
		})
	}
}

// Percent is the GOGC that gives c's headroom over a live heap of live
// bytes for a program allocating rate bytes a second.
func (c Config) Percent(live uint64, rate float64) int {
	if live == 0 {
		return maxPercent
	}
	headroom := max(float64(c.Headroom), rate*c.Interval.Seconds())
	p := int(min(headroom*100/float64(live), maxPercent))
	return max(p, min(c.MinPercent, maxPercent))
}

// run sets GOGC every tick until done is closed. The rate is the highest
// of the last window ticks', so that GOGC rises at once when load comes and
// falls a few seconds after it goes.
func (c Config) run(done <-chan struct{}) {
	samples := []metrics.Sample{{Name: liveHeap}, {Name: allocated}}
	read := func() (live, total uint64, ok bool) {
		metrics.Read(samples)
		if samples[0].Value.Kind() != metrics.KindUint64 || samples[1].Value.Kind() != metrics.KindUint64 {
			return 0, 0, false
		}
		return samples[0].Value.Uint64(), samples[1].Value.Uint64(), true
	}
	_, prevTotal, ok := read()
	if !ok {
		return
	}
	var rates [window]float64
	prev, last := time.Now(), maxPercent
	t := time.NewTicker(tick)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		case now := <-t.C:
			live, total, _ := read()
			rates[i%window] = float64(total-prevTotal) / now.Sub(prev).Seconds()
			prev, prevTotal = now, total
			if p := c.Percent(live, slices.Max(rates[:])); p != last {
				debug.SetGCPercent(p)
				last = p
			}
		}
	}
}
