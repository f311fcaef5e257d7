// Package layering composes a control plane from layers. A Layer bundles
// what one slice of the API needs: native API groups with their OpenAPI
// definitions, whether CRDs or aggregation are served, post-start hooks,
// authorizers, controllers, the RBAC policy they run under and the
// admission plugins its APIs make work. The generic control plane is a
// Stack of layers; a consumer removes, replaces or adds layers in code:
//
//	stack := layering.Generic().Without(layering.Coordination).With(myLayer)
//	comp, err := stack.Compose() // -> apiserver.NewConfig(opts, comp), allinone.Start(ctx, o, comp)
package layering

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	resourcequotaadmission "k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	genericapiserver "k8s.io/apiserver/pkg/server"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/kube-openapi/pkg/common"

	gcpadmission "github.com/gcp-project/gcp/pkg/controlplane/admission"
	certapproval "github.com/gcp-project/gcp/pkg/controlplane/admission/certificates/approval"
	"github.com/gcp-project/gcp/pkg/controlplane/admission/certificates/ctbattest"
	certsigning "github.com/gcp-project/gcp/pkg/controlplane/admission/certificates/signing"
	certsubjectrestriction "github.com/gcp-project/gcp/pkg/controlplane/admission/certificates/subjectrestriction"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/authz"
	authrbac "github.com/gcp-project/gcp/pkg/controlplane/auth/rbac"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/clusterroleaggregation"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/csrcleaner"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/csrsigning"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/garbagecollector"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/namespace"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/resourcequota"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/rootcacertpublisher"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/serviceaccount"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/vapstatus"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/apiserverinternal"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/authentication"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/authorization"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/certificates"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/coordination"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/events"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol"
	flowcontrolensurer "github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol/ensurer"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/rbac"
)

// Names of the layers of the generic control plane.
const (
	Core          = "core"
	Coordination  = "coordination"
	Events        = "events"
	APIExtensions = "apiextensions"
	Aggregation   = "aggregation"
	// RBAC serves rbac.authorization.k8s.io, authorizes requests with it
	// and reconciles the bootstrap policy. Without it, only system:masters
	// is authorized.
	RBAC = "rbac"
	// Authentication serves authentication.k8s.io (TokenReview,
	// SelfSubjectReview).
	Authentication = "authentication"
	// Authorization serves authorization.k8s.io (access and rules reviews).
	Authorization = "authorization"
	// AdmissionRegistration serves admissionregistration.k8s.io: webhook
	// configurations and admission policies with their bindings.
	AdmissionRegistration = "admissionregistration"
	// FlowControl serves flowcontrol.apiserver.k8s.io (API Priority and
	// Fairness configuration).
	FlowControl = "flowcontrol"
	// Certificates serves certificates.k8s.io (CertificateSigningRequests,
	// ClusterTrustBundles) and runs the CSR signer and cleaner.
	Certificates = "certificates"
	// APIServerInternal serves internal.apiserver.k8s.io (StorageVersions),
	// off unless --runtime-config enables it, as upstream.
	APIServerInternal = "apiserverinternal"
)

// Layer is one unit of composition.
type Layer struct {
	// Name identifies the layer in a Stack; it must be unique.
	Name string
	// APIGroups are native groups the layer serves.
	APIGroups []registry.APIGroup
	// OpenAPIDefinitions are the generated definitions (openapi-gen) of
	// the layer's own types; gcp's, k8s.io/api's and k8s.io/apimachinery's
	// are always there. A group of one's own fails to start without them.
	OpenAPIDefinitions common.GetOpenAPIDefinitions
	// APIExtensions serves CRDs; Aggregation serves APIServices in front.
	APIExtensions bool
	Aggregation   bool
	// PostStartHooks run once the server serves; /readyz waits for them.
	PostStartHooks map[string]genericapiserver.PostStartHookFunc
	// Authenticators join the server's own (certificates, front proxy,
	// tokens), after them, in stack order.
	Authenticators []composition.AuthenticatorFactory
	// Authorizers join the authorizer chain after system:masters, in
	// stack order. A stack without any authorizes "system:masters or
	// nothing".
	Authorizers []composition.AuthorizerFactory
	// Filters join every API server's handler chain after gcp's own
	// steps, nearest the routes, in stack order.
	Filters []composition.Filter
	// Controllers are the layer's controllers, run by `gcp controllers`
	// and `gcp start`. Each brings its own service account and rules
	// (Descriptor.ServiceAccount and Rules), which Compose adds to the
	// policy as ClusterRole and binding system:controller:<account>.
	Controllers []controllers.Descriptor
	// Policy is the other RBAC the layer brings, reconciled at every start
	// with the bootstrap policy and the controllers' roles when the stack
	// serves RBAC: above all what admin, edit and view may do with its APIs
	// (bootstrappolicy.UserRoles, which they aggregate), so that a group
	// is its package plus one line in the stack, its RBAC included.
	Policy bootstrappolicy.Policy
	// AdmissionPlugins are the plugins the layer's APIs make work: gcp's
	// by name (gcpadmission.Named), which run in gcp's order whichever
	// layer names them, and the layer's own with their factories, which
	// run after gcp's built-in plugins and before admission policies and
	// webhooks.
	AdmissionPlugins []gcpadmission.Plugin
}

// Stack is an ordered list of layers.
type Stack []Layer

// Generic returns the layers of gcp's generic control plane.
func Generic() Stack {
	return Stack{
		{
			Name:             Core,
			APIGroups:        []registry.APIGroup{core.APIGroup{}},
			PostStartHooks:   map[string]genericapiserver.PostStartHookFunc{core.SystemNamespacesHookName: core.SystemNamespacesHook},
			AdmissionPlugins: gcpadmission.Named(lifecycle.PluginName, resourcequotaadmission.PluginName),
			Policy:           core.UserRoles(),
			Controllers: []controllers.Descriptor{
				namespace.Descriptor(),
				garbagecollector.Descriptor(),
				serviceaccount.Descriptor(),
				rootcacertpublisher.Descriptor(),
				resourcequota.Descriptor(),
			},
		},
		{Name: Events, APIGroups: []registry.APIGroup{events.APIGroup{}}, Policy: events.UserRoles()},
		RBACLayer(),
		{Name: Authentication, APIGroups: []registry.APIGroup{authentication.APIGroup{}}},
		{Name: Authorization, APIGroups: []registry.APIGroup{authorization.APIGroup{}}, Policy: authorization.UserRoles()},
		{Name: Coordination, APIGroups: []registry.APIGroup{coordination.APIGroup{}}, Policy: coordination.UserRoles()},
		{
			Name:      AdmissionRegistration,
			APIGroups: []registry.APIGroup{admissionregistration.APIGroup{}},
			AdmissionPlugins: gcpadmission.Named(mutatingadmissionpolicy.PluginName, mutatingwebhook.PluginName,
				validatingadmissionpolicy.PluginName, validatingwebhook.PluginName),
			Controllers: []controllers.Descriptor{vapstatus.Descriptor()},
		},
		{Name: FlowControl, APIGroups: []registry.APIGroup{flowcontrol.APIGroup{}}, PostStartHooks: map[string]genericapiserver.PostStartHookFunc{flowcontrolensurer.HookName: flowcontrolensurer.Hook}},
		{
			Name:        Certificates,
			APIGroups:   []registry.APIGroup{certificates.APIGroup{}},
			Controllers: []controllers.Descriptor{csrsigning.Descriptor(), csrcleaner.Descriptor()},
			AdmissionPlugins: gcpadmission.Named(certapproval.PluginName, certsigning.PluginName,
				ctbattest.PluginName, certsubjectrestriction.PluginName),
		},
		{Name: APIServerInternal, APIGroups: []registry.APIGroup{apiserverinternal.APIGroup{}}},
		{Name: APIExtensions, APIExtensions: true},
		{Name: Aggregation, Aggregation: true},
	}
}

// RBACLayer is the RBAC layer: the rbac.authorization.k8s.io API (with
// admin's rules for roles and rolebindings), the RBAC authorizer reading it
// from informer caches, and the bootstrap policy (with every other layer's
// policy) reconciled at every start.
func RBACLayer() Layer {
	return Layer{
		Name:        RBAC,
		APIGroups:   []registry.APIGroup{rbac.APIGroup{}},
		Policy:      bootstrappolicy.Default().Merge(rbac.UserRoles()),
		Controllers: []controllers.Descriptor{clusterroleaggregation.Descriptor()},
		Authorizers: []composition.AuthorizerFactory{func(informers clientgoinformers.SharedInformerFactory) (authz.Named, error) {
			a, err := authrbac.NewFromInformers(informers.Rbac().V1())
			if err != nil {
				return authz.Named{}, err
			}
			return authz.Named{Name: "RBAC", Authorizer: a, RuleResolver: a}, nil
		}},
	}
}

// Without returns the stack minus the named layers.
func (s Stack) Without(names ...string) Stack {
	return slices.DeleteFunc(slices.Clone(s), func(l Layer) bool { return slices.Contains(names, l.Name) })
}

// With returns the stack plus layers; a layer with the name of an existing
// one replaces it in place.
func (s Stack) With(layers ...Layer) Stack {
	out := slices.Clone(s)
	for _, l := range layers {
		if i := slices.IndexFunc(out, func(x Layer) bool { return x.Name == l.Name }); i >= 0 {
			out[i] = l
			continue
		}
		out = append(out, l)
	}
	return out
}

// Names returns the layer names in order.
func (s Stack) Names() []string {
	names := make([]string, len(s))
	for i, l := range s {
		names[i] = l.Name
	}
	return names
}

// Compose merges the layers into the composition every part of the
// control plane is built from; the policy gets a role per service account
// of the stack's controllers, with the union of the rules of the
// controllers that share it. It fails on two layers with one name, two
// layers serving one API group, two post-start hooks, two handler chain
// filters or two controllers with one name, or a controller alias that is
// another controller's name or alias.
func (s Stack) Compose() (composition.Composition, error) {
	c := composition.Composition{PostStartHooks: map[string]genericapiserver.PostStartHookFunc{}}
	seenLayers := map[string]bool{}
	seenGroups := map[string]string{}
	seenControllers := map[string]string{} // controller name -> layer
	aliasOf := map[string]string{}         // alias -> controller name
	seenFilters := map[string]string{}
	for _, l := range s {
		if seenLayers[l.Name] {
			return composition.Composition{}, fmt.Errorf("layer %q appears twice", l.Name)
		}
		seenLayers[l.Name] = true
		for _, g := range l.APIGroups {
			if other, ok := seenGroups[g.GroupName()]; ok {
				return composition.Composition{}, fmt.Errorf("API group %q is served by layers %q and %q", g.GroupName(), other, l.Name)
			}
			seenGroups[g.GroupName()] = l.Name
			c.APIGroups = append(c.APIGroups, g)
		}
		if l.OpenAPIDefinitions != nil {
			c.OpenAPIDefinitions = append(c.OpenAPIDefinitions, l.OpenAPIDefinitions)
		}
		c.APIExtensions = c.APIExtensions || l.APIExtensions
		c.Aggregator = c.Aggregator || l.Aggregation
		c.Authenticators = append(c.Authenticators, l.Authenticators...)
		c.Authorizers = append(c.Authorizers, l.Authorizers...)
		c.AdmissionPlugins = append(c.AdmissionPlugins, l.AdmissionPlugins...)
		c.Policy = c.Policy.Merge(l.Policy)
		for name, hook := range l.PostStartHooks {
			if _, ok := c.PostStartHooks[name]; ok {
				return composition.Composition{}, fmt.Errorf("post-start hook %q is added twice (layer %q)", name, l.Name)
			}
			c.PostStartHooks[name] = hook
		}
		for _, f := range l.Filters {
			if other, ok := seenFilters[f.Name]; ok {
				return composition.Composition{}, fmt.Errorf("handler chain filter %q is in layers %q and %q", f.Name, other, l.Name)
			}
			seenFilters[f.Name] = l.Name
			c.Filters = append(c.Filters, f)
		}
		for _, d := range l.Controllers {
			if other, ok := seenControllers[d.Name]; ok {
				return composition.Composition{}, fmt.Errorf("controller %q is in layers %q and %q", d.Name, other, l.Name)
			}
			if other, ok := aliasOf[d.Name]; ok {
				return composition.Composition{}, fmt.Errorf("controller %q (layer %q) is named as an alias of controller %q", d.Name, l.Name, other)
			}
			seenControllers[d.Name] = l.Name
			// --controllers takes a name or an alias: each must mean one
			// controller, or one would silently win.
			for _, a := range d.Aliases {
				if _, ok := seenControllers[a]; ok {
					return composition.Composition{}, fmt.Errorf("alias %q of controller %q (layer %q) is the name of a controller", a, d.Name, l.Name)
				}
				if other, ok := aliasOf[a]; ok {
					return composition.Composition{}, fmt.Errorf("alias %q of controller %q (layer %q) is an alias of controller %q too", a, d.Name, l.Name, other)
				}
				aliasOf[a] = d.Name
			}
			c.Controllers = append(c.Controllers, d)
		}
	}
	c.Policy = c.Policy.Merge(controllerPolicy(c.Controllers))
	return c, nil
}

// controllerPolicy is the RBAC of descriptors' service accounts: for each
// account, in order of first use, ClusterRole system:controller:<account>
// with the rules of every descriptor running as it (each rule once), bound
// to ServiceAccount kube-system/<account>.
func controllerPolicy(descriptors []controllers.Descriptor) bootstrappolicy.Policy {
	var accounts []string
	rules := map[string][]rbacv1.PolicyRule{}
	for _, d := range descriptors {
		if d.ServiceAccount == "" {
			continue
		}
		if _, ok := rules[d.ServiceAccount]; !ok {
			accounts = append(accounts, d.ServiceAccount)
		}
		for _, r := range d.Rules {
			if !slices.ContainsFunc(rules[d.ServiceAccount], func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
				rules[d.ServiceAccount] = append(rules[d.ServiceAccount], *r.DeepCopy())
			}
		}
	}
	var p bootstrappolicy.Policy
	for _, sa := range accounts {
		p = p.Merge(bootstrappolicy.ControllerPolicy(sa, rules[sa]...))
	}
	return p
}
