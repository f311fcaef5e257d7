package allinone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
)

// A server that fails to start after etcd has started must leave no etcd
// client behind: left open, gRPC clients keep etcd's graceful stop waiting
// for their streams (etcd's request timeout) and then redial the closed
// socket, each failure a gRPC warning in the log. The storage built so far
// is destroyed by apiserver.CompletedConfig.New and Server.PrepareRun when
// they fail (pkg/controlplane/apiserver/workarounds/failedstart.go). The etcd health
// checks are etcdChecks below. k8s.io/apiserver's own
// (factory.CreateHealthCheck) dial in a goroutine of their own, holding a
// lock for as long as the dial blocks, and close on a channel from another
// goroutine: a stop can return before they have even dialled, and a dial
// begun before etcd stopped then redials the closed socket until its 20 s
// dial timeout (TestFailedStart saw it under CI's load). Here Start opens
// each check's client itself once etcd runs, and closes it before etcd
// stops (TestFailedStart holds both; TestEtcdChecksClose the order).

// etcdChecks are the etcd health and readiness checks that
// k8s.io/apiserver's EtcdOptions adds (same names, groups, endpoints,
// timeouts and rate limit), with a difference: their etcd clients are
// opened by start, once etcd runs, and closed by stop, instead of from
// configuration until the server has drained. Until start, and after
// stop, the checks fail as the library's do before their client connects
// and once it has closed.
type etcdChecks []*etcdCheck

// etcdCheck is one check: a probe of etcd at most every timeout/2, each
// bounded by timeout; between probes it answers with the last result, as
// the library's check does.
type etcdCheck struct {
	config  storagebackend.Config
	timeout time.Duration
	limiter *rate.Limiter

	mu     sync.RWMutex
	prober factory.Prober
	closed bool
	// last is the last probe's result: checks run at once (/healthz and
	// /readyz), one probing while the others read it.
	last atomic.Pointer[probeResult]
}

// probeResult is one probe's error, nil if etcd answered.
type probeResult struct{ err error }

func newEtcdCheck(config storagebackend.Config, timeout time.Duration) *etcdCheck {
	c := &etcdCheck{
		config:  config,
		timeout: timeout,
		limiter: rate.NewLimiter(rate.Every(timeout/2), 1),
	}
	c.last.Store(&probeResult{errNotConnected})
	return c
}

var (
	errNotConnected = errors.New("etcd client connection not yet established")
	errChecksClosed = errors.New("server is shutting down")
)

func (c *etcdCheck) run(*http.Request) error {
	// A probe holds the read lock, so close waits for it (at most timeout)
	// rather than closing the client under it.
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch {
	case c.closed:
		return errChecksClosed
	case c.prober == nil:
		return errNotConnected
	case !c.limiter.Allow():
		return c.last.Load().err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	err := c.prober.Probe(ctx)
	c.last.Store(&probeResult{err})
	return err
}

// open connects the check's client.
func (c *etcdCheck) open() error {
	p, err := factory.CreateProber(c.config)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return p.Close()
	}
	c.prober = p
	return nil
}

// close closes the check's client; the check fails from then on.
func (c *etcdCheck) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.prober != nil {
		_ = c.prober.Close()
		c.prober = nil
	}
}

// addEtcdChecks adds the checks of o's servers to every config, as
// EtcdOptions.ApplyWithStorageFactoryTo does unless SkipHealthEndpoints.
// Start calls the one embedded member through o.StorageConfig and clears
// --etcd-servers-overrides, so there are no overrides to check.
func addEtcdChecks(o *genericoptions.EtcdOptions, configs ...*genericapiserver.Config) etcdChecks {
	sc := o.StorageConfig
	health := newEtcdCheck(sc, cmp.Or(sc.HealthcheckTimeout, storagebackend.DefaultHealthcheckTimeout))
	ready := newEtcdCheck(sc, cmp.Or(sc.ReadycheckTimeout, storagebackend.DefaultReadinessTimeout))
	for _, c := range configs {
		c.AddHealthChecks(healthz.NamedGroupedCheck("etcd", "etcd", health.run))
		c.AddReadyzChecks(healthz.NamedGroupedCheck("etcd-readiness", "etcd-readiness", ready.run))
	}
	return etcdChecks{health, ready}
}

// start opens the checks' etcd clients: etcd must be running. On error,
// those opened are closed.
func (cs etcdChecks) start() error {
	for _, c := range cs {
		if err := c.open(); err != nil {
			cs.stop()
			return fmt.Errorf("etcd health check: %w", err)
		}
	}
	return nil
}

// stop closes the checks' etcd clients, waiting for probes in flight.
func (cs etcdChecks) stop() {
	for _, c := range cs {
		c.close()
	}
}
