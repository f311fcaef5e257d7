// Package controllers is `gcp controllers`: the generic controllers as
// their own process against any gcp (or Kubernetes) API server, with leader
// election so that several can run and one works.
package controllers

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/term"

	"github.com/gcp-project/gcp/internal/gcheadroom"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/layering"
)

// NewOptions returns the defaults for the stack's controllers, leader
// election on.
func NewOptions(stack layering.Stack) (*controllers.Options, error) {
	comp, err := stack.Compose()
	if err != nil {
		return nil, err
	}
	o := controllers.NewOptions(comp.Controllers)
	o.Generic.LeaderElection.LeaderElect = true
	return o, nil
}

// NewCommand returns `controllers` running the stack's controllers; it
// runs until ctx is done.
func NewCommand(ctx context.Context, stack layering.Stack) *cobra.Command {
	o, err := NewOptions(stack)
	if err != nil {
		// The stack is fixed when main builds it; an invalid one is a bug
		// there, found by its first run.
		panic(fmt.Sprintf("controllers of the stack: %v", err))
	}
	fss := &cliflag.NamedFlagSets{}
	o.AddFlags(fss)
	cmd := &cobra.Command{
		Use:   "controllers",
		Short: "Run the controllers against an API server",
		Long: "Run gcp's controllers (namespace deletion, garbage collection, service accounts, root CA publishing, resource quota usage, " +
			"ClusterRole aggregation, CertificateSigningRequest signing and cleaning, ValidatingAdmissionPolicy type checking) against the API server in --kubeconfig. Several may run; they elect a leader " +
			"with the Lease kube-system/" + controllers.LeaseName + " and only the leader works.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := o.ConfigContext(ctx)
			if err != nil {
				if ctx.Err() != nil {
					// Stopped by a signal while starting: a stop, not a
					// failure, as once running.
					return nil
				}
				return err
			}
			cfg.NotifySystemd = true
			defer gcheadroom.Start(gcheadroom.Default())()
			return controllers.Run(ctx, cfg)
		},
	}
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *fss, cols)
	return cmd
}
