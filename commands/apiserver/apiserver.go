// Package apiserver is `gcp apiserver`: the API server alone, against etcd
// members given with --etcd-servers, with TLS flags like kube-apiserver's.
package apiserver

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/term"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/sdnotify"
	"github.com/gcp-project/gcp/pkg/gcheadroom"
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
			defer gcheadroom.Start(gcheadroom.Default)()
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
// is done; notify, under systemd, hears READY=1 once /readyz is 200.
func Run(ctx context.Context, o options.CompletedOptions, comp composition.Composition, notify sdnotify.Notifier) error {
	cfg, err := apiserver.NewConfig(o, comp)
	if err != nil {
		return fmt.Errorf("configuring the apiserver: %w", err)
	}
	server, err := cfg.Complete().New()
	if err != nil {
		return err
	}
	prepared, err := server.PrepareRun()
	if err != nil {
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
