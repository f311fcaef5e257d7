package apiserver

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/admission"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"

	gcpadmission "github.com/gcp-project/gcp/pkg/controlplane/admission"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/guards"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/workarounds"
	"github.com/gcp-project/gcp/pkg/controlplane/nesting"
)

// applyAdmission is NewConfig's admission stage: the composition's plugins
// in upstream's order, each admission policy plugin decorated with the
// evaluation budget, the chain held until its plugins are ready
// (workarounds.AdmissionReadiness) and wrapped in the guards that measure
// the object a write makes (guards.WithGuardedAdmission).
func (c *Config) applyAdmission(dynamicClient dynamic.Interface) error {
	gc := c.Generic
	admissionOptions, err := admissionFor(c.Options.Admission, c.Composition.AdmissionPlugins)
	if err != nil {
		return err
	}
	readiness := workarounds.NewAdmissionReadiness()
	admissionOptions.Decorators = append(append(admission.Decorators{readiness}, admissionOptions.Decorators...), guards.WithPolicyBudget(guards.EvaluationBudget))
	if err := admissionOptions.ApplyTo(gc, c.Informers, c.Client, dynamicClient, utilfeature.DefaultFeatureGate, gc.EffectiveVersion,
		gcpadmission.Initializers(gc.LoopbackClientConfig, c.ServiceResolver, gc.TracerProvider)...); err != nil {
		return fmt.Errorf("admission: %w", err)
	}
	gc.AdmissionControl = guards.WithGuardedAdmission(readiness.Gate(gc.AdmissionControl, gc.DrainedNotify()), nesting.Limit)
	return nil
}

// admissionFor returns a copy of o whose plugin order keeps only the
// plugins the composition supports, its own registered and ordered;
// enabling any other is an error.
func admissionFor(o *genericoptions.AdmissionOptions, plugins []gcpadmission.Plugin) (*genericoptions.AdmissionOptions, error) {
	gcpadmission.RegisterFactories(o.Plugins, plugins)
	supported := make([]string, len(plugins))
	for i, p := range plugins {
		supported[i] = p.Name
	}
	for _, name := range o.EnablePlugins {
		if !slices.Contains(supported, name) {
			return nil, fmt.Errorf("--enable-admission-plugins: %s needs an API this server does not serve (supported: %s)", name, strings.Join(supported, ", "))
		}
	}
	out := *o
	out.RecommendedPluginOrder = slices.DeleteFunc(slices.Clone(gcpadmission.AddToOrder(o.RecommendedPluginOrder, plugins)), func(name string) bool {
		return !slices.Contains(supported, name)
	})
	return &out, nil
}
