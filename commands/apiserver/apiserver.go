// Package apiserver is `gcp apiserver`: the API server alone, against etcd
// members given with --etcd-servers, with TLS flags like kube-apiserver's.
package apiserver

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/term"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/internal/gcheadroom"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/sdnotify"
	"github.com/gcp-project/gcp/pkg/layering"
)

// NewOptions returns the apiserver's defaults.
func NewOptions() *options.Options { return options.NewOptions() }

// NewCommand returns `apiserver` serving the APIs of stack; it serves until
// ctx is done.
func NewCommand(ctx context.Context, stack layering.Stack) *cobra.Command {
	o := NewOptions()
	comp, composeErr := stack.Compose()
	// The stack's own admission plugins are flags' values too.
	o.AddAdmissionPlugins(comp.AdmissionPlugins)
	fss := &cliflag.NamedFlagSets{}
	o.AddFlags(fss)
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Run the API server against external etcd members",
		Long: "Run the gcp API server: namespaces, configmaps, secrets, service accounts, events, leases, " +
			"CRDs and APIServices, stored in the etcd members given with --etcd-servers.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if composeErr != nil {
				return composeErr
			}
			completed, err := o.Complete()
			if err != nil {
				return err
			}
			if errs := completed.Validate(); len(errs) > 0 {
				return utilerrors.NewAggregate(errs)
			}
			defer gcheadroom.Start(gcheadroom.Default())()
			return Run(ctx, completed, comp, sdnotify.TakeFromEnv())
		},
	}
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *fss, cols)
	return cmd
}

// Run serves the composition's APIs with the completed options until ctx
// is done; notify, under systemd, hears READY=1 once /readyz is 200. If
// ctx is done before the server is built (building it connects to etcd,
// up to 20 s per storage backend while etcd does not answer, without a
// context), Run returns nil at once: a stop, not a failure.
func Run(ctx context.Context, o options.CompletedOptions, comp composition.Composition, notify sdnotify.Notifier) error {
	cfg, prepared, err := build(ctx, o, comp)
	if err != nil || prepared == nil {
		return err
	}
	if notify.Socket != "" {
		loopback, err := discovery.NewDiscoveryClientForConfig(cfg.Generic.LoopbackClientConfig)
		if err != nil {
			return err
		}
		go notify.WhenReady(ctx, sdnotify.Readyz(loopback.RESTClient()))
	}
	return prepared.Run(ctx)
}

// buildLogPeriod is how often build says that it still waits for etcd.
const buildLogPeriod = 5 * time.Second

// build configures and prepares the server in a goroutine, saying every
// few seconds while it takes long that it waits for etcd, the one thing
// it reaches over the network. It returns a nil server if ctx is done
// first.
func build(ctx context.Context, o options.CompletedOptions, comp composition.Composition) (*apiserver.Config, *apiserver.PreparedServer, error) {
	type result struct {
		cfg      *apiserver.Config
		prepared *apiserver.PreparedServer
		err      error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() { done <- r }()
		if r.cfg, r.err = apiserver.NewConfig(o, comp); r.err != nil {
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
