// Package controllers is `gcp controllers`: the generic controllers as
// their own process against any gcp (or Kubernetes) API server, with leader
// election so that several can run and one works.
package controllers

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/term"

	"github.com/gcp-project/gcp/internal/gcheadroom"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/controlplane/logging"
	"github.com/gcp-project/gcp/pkg/controlplane/sdnotify"
	"github.com/gcp-project/gcp/pkg/controlplane/version"
	"github.com/gcp-project/gcp/pkg/layering"
)

// NewOptions returns the defaults of `controllers` for the composition's
// controllers: the library's (controllers.NewOptions, which has leader
// election on, as k8s.io/controller-manager recommends).
func NewOptions(comp composition.Composition) *controllers.Options {
	return controllers.NewOptions(comp.Controllers)
}

// NewCommand returns `controllers` running the stack's controllers; it
// runs until ctx is done. name is the product's, as main's root command is
// called. The stack is composed once, here; if that fails, running the
// command returns the error.
func NewCommand(ctx context.Context, name string, stack layering.Stack) *cobra.Command {
	comp, composeErr := stack.Compose()
	o := NewOptions(comp)
	fss := &cliflag.NamedFlagSets{}
	o.AddFlags(fss)
	features := addFeatureFlags(fss)
	logs := logging.NewOptions()
	logging.AddFlags(logs, fss)
	cmd := &cobra.Command{
		Use:   "controllers",
		Short: "Run the controllers against an API server",
		Long: "Run " + name + "'s controllers (namespace deletion, garbage collection, service accounts, root CA publishing, resource quota usage, " +
			"ClusterRole aggregation, CertificateSigningRequest signing and cleaning, ValidatingAdmissionPolicy type checking) against the API server in --kubeconfig. Several may run; they elect a leader " +
			"with the Lease kube-system/" + controllers.LeaseName + " and only the leader works.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := version.CheckVersionFlags(cmd.Flags()); err != nil {
				return err
			}
			// Feature gates are final once flags are parsed, before
			// anything reads them (logging's own gates included).
			if err := features.Set(); err != nil {
				return err
			}
			if errs := features.Validate(); len(errs) > 0 {
				return utilerrors.NewAggregate(errs)
			}
			// version_info; kubernetes_feature_enabled is recorded by
			// controllers.Run, for every process that runs them.
			features.AddMetrics()
			if err := logging.Apply(logs); err != nil {
				return err
			}
			if composeErr != nil {
				return fmt.Errorf("composing the stack: %w", composeErr)
			}
			cfg, err := o.ConfigContext(ctx)
			if err != nil {
				if ctx.Err() != nil {
					// Stopped by a signal while starting: a stop, not a
					// failure, as once running.
					return nil
				}
				return err
			}
			cfg.Notify = sdnotify.TakeFromEnv()
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

// addFeatureFlags adds --feature-gates, --emulated-version and
// --min-compatibility-version to the generic section, as
// kube-controller-manager has them: the kube component's feature gates and
// effective version, in the registry `gcp apiserver` uses (the process runs
// one command). They decide, e.g., whether the controllers' histograms are
// native too (NativeHistograms).
func addFeatureFlags(fss *cliflag.NamedFlagSets) basecompatibility.ComponentGlobalsRegistry {
	registry := compatibility.DefaultComponentGlobalsRegistry
	if registry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent) == nil {
		utilruntime.Must(registry.Register(basecompatibility.DefaultKubeComponent, compatibility.DefaultBuildEffectiveVersion(), utilfeature.DefaultMutableFeatureGate))
	}
	registry.AddFlags(fss.FlagSet("generic"))
	return registry
}
