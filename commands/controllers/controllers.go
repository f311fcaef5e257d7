// Package controllers is `gcp controllers`: the generic controllers as
// their own process against any gcp (or Kubernetes) API server, with leader
// election so that several can run and one works.
package controllers

import (
	"context"
	"fmt"
	"strings"

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
		Long: "Run " + name + "'s controllers" + runs(comp) + " against the API server in --kubeconfig. Several may run; they elect a leader " +
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
			// systemd hears READY=1 once the API server answers (a
			// standby is ready too) and STOPPING=1 when the controllers
			// begin to stop.
			reached := make(chan struct{})
			cfg.OnAPIServerReached = func() { close(reached) }
			defer sdnotify.TakeFromEnv().Start(ctx, reached)()
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

// runs names, for the help, the composition's controllers: " (a, b; off
// unless --controllers names them: c)", or nothing for a composition
// without any (a stack that did not compose).
func runs(comp composition.Composition) string {
	var on, off []string
	for _, d := range comp.Controllers {
		if d.DisabledByDefault {
			off = append(off, d.Name)
		} else {
			on = append(on, d.Name)
		}
	}
	if len(on)+len(off) == 0 {
		return ""
	}
	out := " (" + strings.Join(on, ", ")
	if len(off) > 0 {
		if len(on) > 0 {
			out += "; "
		}
		out += "off unless --controllers names them: " + strings.Join(off, ", ")
	}
	return out + ")"
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
