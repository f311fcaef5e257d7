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

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/layering"
)

// NewOptions returns the defaults for the generic control plane's
// controllers.
func NewOptions() (*controllers.Options, error) {
	descriptors, err := layering.Generic().Controllers()
	if err != nil {
		return nil, err
	}
	o := controllers.NewOptions(descriptors)
	o.Generic.LeaderElection.LeaderElect = true
	return o, nil
}

// NewCommand returns `gcp controllers`; it runs until ctx is done.
func NewCommand(ctx context.Context) *cobra.Command {
	o, err := NewOptions()
	if err != nil {
		// The generic stack is fixed at build time; a duplicate is a bug.
		panic(fmt.Sprintf("generic control plane controllers: %v", err))
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
			cfg, err := o.Config()
			if err != nil {
				return err
			}
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
