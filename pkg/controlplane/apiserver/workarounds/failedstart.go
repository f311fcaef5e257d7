package workarounds

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
)

// A server whose construction fails leaves the storage of every resource
// built so far behind, each with its own etcd client and, with the watch
// cache, an open watch stream: k8s.io/apiserver destroys them when a
// running server stops (GenericAPIServer.Destroy), which a server that
// never ran does not reach, and genericapiserver's New does not return the
// servers it built before failing. Left open, they keep etcd's graceful
// stop waiting for their streams and redial a closed socket, each failure
// a gRPC warning, and the in-process clients of `gcp start`
// (pkg/controlplane/etcdstorage) would outlive the member they call. So
// the API server's CompletedConfig.New records the storage it builds
// (StorageTracker) and destroys it when New or Server.PrepareRun fails;
// once PrepareRun has succeeded the server owns it. test/integration's
// TestFailedStart holds this.

// StorageTracker records every storage built through the
// RESTOptionsGetters it wraps while the server is being built, so that a
// failed start can destroy them with the library's destroy functions.
type StorageTracker struct {
	mu       sync.Mutex
	done     bool
	storages []*trackedStorage
}

// NewStorageTracker returns a tracker that has recorded nothing yet.
func NewStorageTracker() *StorageTracker { return &StorageTracker{} }

// Wrap makes g's storage report itself, with its destroy function, to t.
func (t *StorageTracker) Wrap(g generic.RESTOptionsGetter) generic.RESTOptionsGetter {
	return WrapStorage(g, func(s storage.Interface, destroy factory.DestroyFunc) storage.Interface {
		if destroy == nil {
			return s
		}
		ts := &trackedStorage{Interface: s, destroy: destroy}
		if !t.add(ts) {
			return s
		}
		return ts
	})
}

// add records s unless the tracker is done, and reports whether it did.
func (t *StorageTracker) add(s *trackedStorage) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.done {
		t.storages = append(t.storages, s)
	}
	return !t.done
}

// statsDrainTimeout bounds how long destroy waits for Stats calls in flight:
// with etcd up they take milliseconds.
const statsDrainTimeout = 5 * time.Second

// Destroy destroys every storage recorded so far and stops recording; a
// nil tracker has nothing to destroy.
// Stats calls in flight finish first: a registry store polls Stats from
// the moment it is built, with a context nothing cancels, and a call
// whose etcd client closes under it is retried a hundred times, each
// failure a warning.
func (t *StorageTracker) Destroy() {
	if t == nil {
		return
	}
	t.mu.Lock()
	storages := t.storages
	t.storages, t.done = nil, true
	t.mu.Unlock()
	drained := make([]<-chan struct{}, len(storages))
	for i, s := range storages {
		drained[i] = s.closeStats()
	}
	timeout := time.NewTimer(statsDrainTimeout)
	defer timeout.Stop()
wait:
	for _, d := range drained {
		select {
		case <-d:
		case <-timeout.C:
			break wait
		}
	}
	// The library's destroy functions may be called more than once: the
	// server's own Destroy may call them too.
	for i := len(storages) - 1; i >= 0; i-- {
		storages[i].destroy()
	}
}

// Release stops recording: the server owns its storage and destroys it
// when it stops.
func (t *StorageTracker) Release() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.storages, t.done = nil, true
}

// errDestroyed is what Stats returns once a failed start has destroyed the
// storage.
var errDestroyed = errors.New("storage destroyed: the server failed to start")

// trackedStorage is a storage built while the server is being built: the
// storage itself, except that Stats can be drained and refused before the
// storage is destroyed.
type trackedStorage struct {
	storage.Interface
	destroy factory.DestroyFunc

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
}

func (s *trackedStorage) Stats(ctx context.Context) (storage.Stats, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return storage.Stats{}, errDestroyed
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	return s.Interface.Stats(ctx)
}

// closeStats refuses further Stats calls and returns a channel closed once
// those in flight have returned.
func (s *trackedStorage) closeStats() <-chan struct{} {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(done)
	}()
	return done
}
