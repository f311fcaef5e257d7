// Package gcheadroom sizes the Go garbage collector's headroom (how much
// the heap may grow between two collections) in bytes, not as a share of
// the live heap.
//
// Go's default, GOGC=100, lets the heap grow by as much as is live before
// collecting again. Most of an API server's live heap is long-lived state
// (the handlers, storage, caches and informers of every resource and every
// CRD), while the garbage its requests make does not grow with the CRDs:
// with hundreds of CRDs, GOGC=100 holds hundreds of MiB of RSS for garbage
// that a fixed headroom would hold as well. After each collection, Start
// sets GOGC so that the next one starts once about Config.Headroom more
// bytes have been allocated, but never above 100 (a small heap is collected
// as Go would) nor below Config.MinPercent (so a very large heap is not
// collected all the time). Traded: a large heap is collected more often, so
// a busy server with many CRDs spends more CPU marking it.
//
// It is for a program's main (gcp's server commands), not for a library:
// GOGC is per process. An operator's GOGC environment variable wins.
package gcheadroom

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// Config is the headroom Start keeps.
type Config struct {
	// Headroom is the bytes to allocate between two collections.
	Headroom uint64
	// MinPercent is the lowest GOGC set, however large the live heap.
	MinPercent int
}

// Default is gcp's servers' headroom: 64 MiB, about what the garbage of a
// few thousand requests a second amounts to between collections at
// GOGC=100 in an idle server's heap; GOGC=25 at the least.
var Default = Config{Headroom: 64 << 20, MinPercent: 25}

// maxPercent is Go's default GOGC, the highest Start sets.
const maxPercent = 100

// liveHeap is the runtime metric of the heap the last collection marked.
const liveHeap = "/gc/heap/live:bytes"

// Start keeps c's headroom until stop is called (which restores GOGC=100).
// With GOGC set in the environment it does nothing.
func Start(c Config) (stop func()) {
	if os.Getenv("GOGC") != "" || c.Headroom == 0 {
		return func() {}
	}
	t := &tuner{config: c, sample: []metrics.Sample{{Name: liveHeap}}, last: maxPercent}
	t.arm()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.stopped.Store(true)
			t.mu.Lock()
			defer t.mu.Unlock()
			debug.SetGCPercent(maxPercent)
		})
	}
}

// Percent is the GOGC that gives c's headroom over a live heap of live
// bytes.
func (c Config) Percent(live uint64) int {
	if live == 0 {
		return maxPercent
	}
	p := int(min(c.Headroom*100/live, maxPercent))
	return max(p, min(c.MinPercent, maxPercent))
}

// tuner sets GOGC after every collection: a finalizer on a sentinel runs
// once the collection that found it unreachable is done, and arms the
// next sentinel.
type tuner struct {
	config  Config
	stopped atomic.Bool

	mu     sync.Mutex
	sample []metrics.Sample
	last   int
}

// sentinel is garbage as soon as it is made; it holds a pointer so that
// it is never one of the tiny allocations finalizers may skip.
type sentinel struct{ t *tuner }

func (t *tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) { s.t.collected() })
}

func (t *tuner) collected() {
	if t.stopped.Load() {
		return
	}
	t.mu.Lock()
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		if p := t.config.Percent(t.sample[0].Value.Uint64()); p != t.last && !t.stopped.Load() {
			debug.SetGCPercent(p)
			t.last = p
		}
	}
	t.mu.Unlock()
	t.arm()
}
