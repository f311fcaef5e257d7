package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// refreshPoll is how often refresh looks whether every monitor has shown
// its first listing.
const refreshPoll = 20 * time.Millisecond

// errStale asks for the graph to be brought up to date (refresh) before a
// worker acts again on a node: the act (removing an orphan or
// foregroundDeletion finalizer) would let the owner go, and must not
// depend on what the collector happens to watch or remember.
var errStale = errors.New("the graph must hold every resource served before acting")

// refresher runs refreshes one at a time for any number of workers. A
// worker waits for a refresh that starts after its call: one that was
// already running may have read discovery too early. Workers that call
// while a refresh runs share the next one.
type refresher struct {
	refresh func(context.Context) error
	// wg counts the goroutine that runs refreshes, while there is one.
	wg sync.WaitGroup

	mu      sync.Mutex
	next    *refreshRound
	running bool
}

// refreshRound is a refresh that waiters share: done is closed once it
// ended, with err.
type refreshRound struct {
	done chan struct{}
	err  error
}

// wait asks for a refresh and waits until one that started after the call
// has ended, or ctx is done.
func (r *refresher) wait(ctx context.Context) error {
	r.mu.Lock()
	if r.next == nil {
		r.next = &refreshRound{done: make(chan struct{})}
	}
	round := r.next
	if !r.running {
		r.running = true
		r.wg.Add(1)
		go r.loop(ctx)
	}
	r.mu.Unlock()
	select {
	case <-round.done:
		return round.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop refreshes until no one waits.
func (r *refresher) loop(ctx context.Context) {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		round := r.next
		r.next = nil
		if round == nil {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		round.err = r.refresh(ctx)
		close(round.done)
	}
}

// refresh makes the graph hold every object, as of now, of every resource
// that discovery serves now: it reads discovery (starting monitors for
// new resources, see resync), waits for every monitor to show its first
// listing and for the graph builder to apply what it was given. It fails,
// naming what is missing, if discovery fails altogether, a monitor cannot
// be started, or a resource is not listed within one discovery period;
// the worker then retries later, and the owner waits. A group whose
// discovery fails while others answer (an aggregated API that is down)
// keeps its monitors, if any, and does not stop the refresh: the
// collector cannot watch it either way.
func (c *controller) refresh(ctx context.Context) error {
	if err := c.resync(ctx); err != nil {
		return err
	}
	syncCtx, cancel := context.WithTimeout(ctx, c.discoveryPeriod)
	defer cancel()
	err := wait.PollUntilContextCancel(syncCtx, refreshPoll, true, func(context.Context) (bool, error) {
		return c.monitors.Synced(), nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("resources not listed yet: %v", c.monitors.Unsynced())
	}
	return c.builder.caughtUp(syncCtx)
}
