package apiserver

import (
	"context"
	"fmt"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/sdnotify"
)

// NewOptions returns the defaults of `gcp apiserver` for the composition's
// APIs: the API server's own options, with the composition's admission
// plugins (which are flags' values too).
func NewOptions(comp composition.Composition) *options.Options {
	o := options.NewOptions()
	o.AddAdmissionPlugins(comp.AdmissionPlugins)
	return o
}

// Run is `gcp apiserver` without its command line: it completes and
// validates o, builds the server of the composition's APIs and serves
// until ctx is done. notify, under systemd, hears READY=1 once /readyz is
// 200 and STOPPING=1 when the server begins to stop (sdnotify.Start). If
// ctx is done before the server is built (building it connects to etcd,
// up to 20 s per storage backend while etcd does not answer, without a
// context), Run returns nil at once: a stop, not a failure.
func Run(ctx context.Context, o *options.Options, comp composition.Composition, notify sdnotify.Notifier) error {
	completed, err := o.Complete()
	if err != nil {
		return err
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	cfg, prepared, err := build(ctx, completed, comp)
	if err != nil || prepared == nil {
		return err
	}
	ready := func(context.Context) bool { return false }
	if notify.Socket != "" {
		loopback, err := discovery.NewDiscoveryClientForConfig(cfg.Generic.LoopbackClientConfig)
		if err != nil {
			return err
		}
		ready = sdnotify.Readyz(loopback.RESTClient())
	}
	defer notify.Start(ctx, ready)()
	return prepared.Run(ctx)
}

// buildLogPeriod is how often build says that it still waits for etcd.
const buildLogPeriod = 5 * time.Second

// build configures and prepares the server in a goroutine, saying every
// few seconds while it takes long that it waits for etcd, the one thing
// it reaches over the network. It returns a nil server if ctx is done
// first.
func build(ctx context.Context, o options.CompletedOptions, comp composition.Composition) (*Config, *PreparedServer, error) {
	type result struct {
		cfg      *Config
		prepared *PreparedServer
		err      error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() { done <- r }()
		if r.cfg, r.err = NewConfig(o, comp); r.err != nil {
			r.err = fmt.Errorf("configuring the apiserver: %w", r.err)
			return
		}
		server, err := r.cfg.Complete().New()
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
			return r.cfg, r.prepared, r.err
		case <-ctx.Done():
			klog.FromContext(ctx).Info("Stopped while starting")
			return nil, nil, nil
		case <-tick.C:
			klog.FromContext(ctx).Info("Waiting for etcd to answer before serving", "etcdServers", o.Etcd.StorageConfig.Transport.ServerList)
		}
	}
}
