// Package admission is gcp's admission plugin set: k8s.io/apiserver's
// plugins (namespace lifecycle, admission policies, webhooks, quota) plus
// gcp's own for the APIs it serves, in upstream's order, and the
// initializers that give them what they need.
package admission

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"

	"github.com/gcp-project/gcp/pkg/controlplane/admission/certificates/approval"
	"github.com/gcp-project/gcp/pkg/controlplane/admission/certificates/ctbattest"
	"github.com/gcp-project/gcp/pkg/controlplane/admission/certificates/signing"
	"github.com/gcp-project/gcp/pkg/controlplane/admission/certificates/subjectrestriction"
)

// plugin is one admission plugin: its name and how to register it.
type plugin struct {
	name     string
	register func(*admission.Plugins)
}

// ordered lists every plugin gcp knows in the order kube-apiserver runs
// them (k8s.io/kubernetes pkg/kubeapiserver/options AllOrderedPlugins,
// restricted to the APIs gcp serves). All are on by default, as in
// upstream's generic control plane.
var ordered = []plugin{
	{lifecycle.PluginName, lifecycle.Register},
	{approval.PluginName, approval.Register},
	{signing.PluginName, signing.Register},
	{ctbattest.PluginName, ctbattest.Register},
	{subjectrestriction.PluginName, subjectrestriction.Register},
	{mutatingadmissionpolicy.PluginName, registerMutatingPolicy},
	{mutatingwebhook.PluginName, mutatingwebhook.Register},
	{validatingadmissionpolicy.PluginName, registerValidatingPolicy},
	{validatingwebhook.PluginName, validatingwebhook.Register},
	{resourcequota.PluginName, resourcequota.Register},
}

// Register registers every plugin of gcp's set into plugins.
func Register(plugins *admission.Plugins) {
	for _, p := range ordered {
		p.register(plugins)
	}
}

// RecommendedOrder is the order plugins run in; --enable-admission-plugins
// and --disable-admission-plugins pick from it.
func RecommendedOrder() []string {
	names := make([]string, len(ordered))
	for i, p := range ordered {
		names[i] = p.name
	}
	return names
}

// DefaultOff is the set of plugins off unless enabled: none, as in
// upstream's generic control plane every plugin gcp has is on by default.
func DefaultOff() sets.Set[string] {
	return sets.New[string]()
}

// Plugin is an admission plugin a layer makes work: one of gcp's set by
// name, or a plugin of the layer's own with the factory that makes it.
type Plugin struct {
	// Name is the plugin's name, as --enable-admission-plugins and
	// --disable-admission-plugins take it.
	Name string
	// Factory makes a plugin outside gcp's set; nil for one of gcp's.
	// Layers' plugins are on by default and run after gcp's built-in
	// plugins, before the admission policies and webhooks, in stack order,
	// where kube-apiserver runs its compiled-in plugins.
	Factory admission.Factory
}

// Named returns the plugins of gcp's set with these names.
func Named(names ...string) []Plugin {
	out := make([]Plugin, len(names))
	for i, n := range names {
		out[i] = Plugin{Name: n}
	}
	return out
}

// firstExternal is the first plugin of gcp's order that calls out to
// configuration users write (policies, webhooks); layers' own plugins run
// before it.
const firstExternal = mutatingadmissionpolicy.PluginName

// AddToOrder returns order with the names of plugins it lacks inserted
// before the admission policy and webhook plugins, in the plugins' order.
func AddToOrder(order []string, plugins []Plugin) []string {
	var missing []string
	for _, p := range plugins {
		if !slices.Contains(order, p.Name) && !slices.Contains(missing, p.Name) {
			missing = append(missing, p.Name)
		}
	}
	if len(missing) == 0 {
		return order
	}
	at := slices.Index(order, firstExternal)
	if at < 0 {
		at = len(order)
	}
	return slices.Concat(order[:at:at], missing, order[at:])
}

// RegisterFactories registers the factories of plugins that registry does
// not know yet; registering a name twice is a no-op here (k8s.io/apiserver
// would exit the process).
func RegisterFactories(registry *admission.Plugins, plugins []Plugin) {
	for _, p := range plugins {
		if p.Factory != nil && !slices.Contains(registry.Registered(), p.Name) {
			registry.Register(p.Name, p.Factory)
		}
	}
}
