package allinone

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
)

// A server whose construction fails after etcd has started leaves etcd
// clients behind: the storage of every resource built so far (each with its
// own client and, with the watch cache, an open watch stream) and the etcd
// health checks. k8s.io/apiserver closes them when a running server stops
// (GenericAPIServer.Destroy, and the lifecycle's drained signal), which a
// server that never ran does not reach; apiserver.CompletedConfig.New does
// not return the servers it built before failing. Left open, gRPC clients
// (the health checks', and the storage's when o.APIServer points it at
// other etcd servers) keep etcd's graceful stop waiting for their streams
// (etcd's request timeout) and then redial the closed socket, each failure
// a gRPC warning in the log; the storage's in-process clients
// (pkg/controlplane/etcdstorage) would outlive the member they call. The
// helpers below let Start close them itself, before etcd: storageTracker
// for the storage, etcdChecks for the checks.

// storageTracker records every storage built through the
// RESTOptionsGetters it wraps while the server is being built, so that a
// failed start can destroy them with the library's destroy functions.
type storageTracker struct {
	mu       sync.Mutex
	done     bool
	storages []*trackedStorage
}

// track wraps the RESTOptionsGetters of cfg's servers.
func (t *storageTracker) track(cfg *apiserver.Config) {
	cfg.Generic.RESTOptionsGetter = t.wrap(cfg.Generic.RESTOptionsGetter)
	if x := cfg.APIExtensions; x != nil {
		// Custom resources' storage (ExtraConfig.CRDRESTOptionsGetter) is
		// built while serving, never during construction.
		x.GenericConfig.RESTOptionsGetter = t.wrap(x.GenericConfig.RESTOptionsGetter)
	}
	if a := cfg.Aggregator; a != nil {
		a.GenericConfig.RESTOptionsGetter = t.wrap(a.GenericConfig.RESTOptionsGetter)
	}
}

// wrap makes g's storage report itself, with its destroy function, to t.
func (t *storageTracker) wrap(g generic.RESTOptionsGetter) generic.RESTOptionsGetter {
	return apiserver.WrapStorage(g, func(s storage.Interface, destroy factory.DestroyFunc) storage.Interface {
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
func (t *storageTracker) add(s *trackedStorage) bool {
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

// destroy destroys every storage recorded so far and stops recording.
// Stats calls in flight finish first: a registry store polls Stats from
// the moment it is built, with a context nothing cancels, and a call
// whose etcd client closes under it is retried a hundred times, each
// failure a warning.
func (t *storageTracker) destroy() {
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

// release stops recording: the server owns its storage and destroys it
// when it stops.
func (t *storageTracker) release() {
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

// etcdChecks are the etcd health and readiness checks that
// k8s.io/apiserver's EtcdOptions adds (same names, groups and endpoints),
// with a difference: their etcd clients are created by start, once the
// server is built, and closed when the stop channel given to start is
// closed, instead of from configuration until the server has drained.
// Until start, the checks fail as the library's do before their client
// connects.
type etcdChecks []*etcdCheck

type etcdCheck struct {
	config storagebackend.Config
	create func(storagebackend.Config, <-chan struct{}) (func() error, error)
	check  atomic.Pointer[func() error]
}

func (c *etcdCheck) run(*http.Request) error {
	if f := c.check.Load(); f != nil {
		return (*f)()
	}
	return errors.New("etcd client connection not yet established")
}

// addEtcdChecks adds the checks of o's servers (and of its
// --etcd-servers-overrides) to every config, as
// EtcdOptions.ApplyWithStorageFactoryTo does unless SkipHealthEndpoints.
func addEtcdChecks(o *genericoptions.EtcdOptions, configs ...*genericapiserver.Config) (etcdChecks, error) {
	var checks etcdChecks
	var health, ready []healthz.HealthChecker
	add := func(sc storagebackend.Config, healthName, readyName string) {
		h := &etcdCheck{config: sc, create: factory.CreateHealthCheck}
		r := &etcdCheck{config: sc, create: factory.CreateReadyCheck}
		checks = append(checks, h, r)
		health = append(health, healthz.NamedGroupedCheck(healthName, "etcd", h.run))
		ready = append(ready, healthz.NamedGroupedCheck(readyName, "etcd-readiness", r.run))
	}
	add(o.StorageConfig, "etcd", "etcd-readiness")
	if len(o.EtcdServersOverrides) > 0 {
		overrides, err := genericoptions.ParseEtcdServersOverrides(o.EtcdServersOverrides)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, override := range overrides {
			servers := append([]string(nil), override.Servers...)
			sort.Strings(servers)
			key := strings.Join(servers, ";")
			if seen[key] {
				continue
			}
			seen[key] = true
			sc := o.StorageConfig
			sc.Transport.ServerList = override.Servers
			add(sc, fmt.Sprintf("etcd-override-%d", len(seen)-1), fmt.Sprintf("etcd-override-readiness-%d", len(seen)-1))
		}
	}
	for _, c := range configs {
		c.AddHealthChecks(health...)
		c.AddReadyzChecks(ready...)
	}
	return checks, nil
}

// start creates the checks' etcd clients; they are closed when stop is.
func (cs etcdChecks) start(stop <-chan struct{}) error {
	for _, c := range cs {
		f, err := c.create(c.config, stop)
		if err != nil {
			return fmt.Errorf("etcd health check: %w", err)
		}
		c.check.Store(&f)
	}
	return nil
}
