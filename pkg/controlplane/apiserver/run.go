package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
)

// NewOptions returns the defaults of `gcp apiserver` for the composition's
// APIs: the API server's own options, with the composition's admission
// plugins (which are flags' values too).
func NewOptions(comp composition.Composition) *options.Options {
	o := options.NewOptions()
	o.AddAdmissionPlugins(comp.AdmissionPlugins)
	return o
}

// Start is `gcp apiserver` without its command line: it completes and
// validates o, builds the server of the composition's APIs and starts
// serving until ctx is done or the handle is closed. If ctx is done before
// the server is built (building it connects to etcd, up to 20 s per
// storage backend while etcd does not answer, without a context), Start
// returns a handle that has already stopped, without an error: a stop,
// not a failure.
func Start(ctx context.Context, o *options.Options, comp composition.Composition) (*Handle, error) {
	completed, err := o.Complete()
	if err != nil {
		return nil, err
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return nil, utilerrors.NewAggregate(errs)
	}
	prepared, err := build(ctx, completed, comp)
	if err != nil {
		return nil, err
	}
	if prepared == nil {
		h := newHandle(func() {})
		close(h.done)
		return h, nil
	}
	return prepared.Start(ctx), nil
}

// Run is Start, then serving until ctx is done or the server fails.
func Run(ctx context.Context, o *options.Options, comp composition.Composition) error {
	h, err := Start(ctx, o, comp)
	if err != nil {
		return err
	}
	<-h.Done()
	return h.Err()
}

// Handle is a running API server, as etcd.Handle is a running member:
// Ready is closed once the server is ready (/readyz answers 200), Done
// once it has stopped, after which Err says why; Close stops it. Its
// methods are safe for concurrent use.
type Handle struct {
	ready  chan struct{}
	done   chan struct{}
	err    error // set before done is closed
	cancel context.CancelFunc
}

func newHandle(cancel context.CancelFunc) *Handle {
	return &Handle{ready: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
}

// readyPoll is how often a starting server's /readyz is asked. A start
// takes a few tenths of a second and is ready at the first 200 after it
// (docs/performance.md: at 50 ms the test server waited 25 ms more on
// average); each request costs well under a millisecond.
const readyPoll = 10 * time.Millisecond

// Start serves p in a goroutine until ctx is done or Close is called, and
// closes the handle's Ready once /readyz, asked through the server's
// loopback client, answers 200: every readiness check passes (etcd, the
// post-start hooks, the informers they wait for).
func (p *PreparedServer) Start(ctx context.Context) *Handle {
	ctx, cancel := context.WithCancel(ctx)
	h := newHandle(cancel)
	go func() {
		err := wait.PollUntilContextCancel(ctx, readyPoll, true, func(ctx context.Context) (bool, error) {
			var status int
			p.readyz.Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
			return status == http.StatusOK, nil
		})
		if err == nil {
			close(h.ready)
		}
	}()
	go func() {
		h.err = p.run(ctx)
		cancel()
		close(h.done)
	}()
	return h
}

// Ready is closed once the server answers /readyz with 200. It is never
// closed if the server stops first.
func (h *Handle) Ready() <-chan struct{} { return h.ready }

// Done is closed once the server has stopped: drained, its storage
// destroyed and its listener closed.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Err is why the server stopped, once Done is closed (nil for a stop by
// ctx or Close); nil before.
func (h *Handle) Err() error {
	select {
	case <-h.done:
		return h.err
	default:
		return nil
	}
}

// Close stops the server, waits until it has stopped and returns Err. It
// is idempotent and safe to call concurrently.
func (h *Handle) Close() error {
	h.cancel()
	<-h.done
	return h.err
}

// buildLogPeriod is how often build says that it still waits for etcd.
const buildLogPeriod = 5 * time.Second

// build configures and prepares the server in a goroutine, saying every
// few seconds while it takes long that it waits for etcd, the one thing
// it reaches over the network. It returns a nil server if ctx is done
// first.
func build(ctx context.Context, o options.CompletedOptions, comp composition.Composition) (*PreparedServer, error) {
	type result struct {
		prepared *PreparedServer
		err      error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() { done <- r }()
		cfg, err := NewConfig(o, comp)
		if err != nil {
			r.err = fmt.Errorf("configuring the apiserver: %w", err)
			return
		}
		server, err := cfg.Complete().New()
		if err != nil {
			r.err = err
			return
		}
		r.prepared, r.err = server.PrepareRun()
	}()
	tick := time.NewTicker(buildLogPeriod)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			return r.prepared, r.err
		case <-ctx.Done():
			klog.FromContext(ctx).Info("Stopped while starting")
			return nil, nil
		case <-tick.C:
			klog.FromContext(ctx).Info("Waiting for etcd to answer before serving", "etcdServers", o.Etcd.StorageConfig.Transport.ServerList)
		}
	}
}
