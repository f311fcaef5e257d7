// Package composition holds the one value a control plane is built from:
// which native API groups it serves (with their OpenAPI definitions),
// whether CRDs and aggregation are on, its post-start hooks, authorizers,
// admission plugins, RBAC policy and controllers. pkg/layering makes one
// from a stack of layers (Stack.Compose); the API server
// (apiserver.NewConfig), the all-in-one control plane (allinone.Start),
// the controller manager (controllers.NewOptions(c.Controllers)) and the
// test server all take it, so each part of a split deployment runs the
// same composition.
package composition

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapiserver "k8s.io/apiserver/pkg/server"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/kube-openapi/pkg/common"

	gcpadmission "github.com/gcp-project/gcp/pkg/controlplane/admission"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/authz"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/controlplane/openapi"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

// Composition is what a control plane serves and runs.
type Composition struct {
	// APIGroups are the native groups served by the generic core server.
	APIGroups []registry.APIGroup
	// OpenAPIDefinitions describe the native groups' types beyond gcp's
	// own (pkg/controlplane/openapi, always included): a group of one's
	// own needs its generated definitions here, or the server fails to
	// start with "cannot find model definition".
	OpenAPIDefinitions []common.GetOpenAPIDefinitions
	// APIExtensions serves apiextensions.k8s.io (CRDs and custom resources).
	APIExtensions bool
	// Aggregator serves apiregistration.k8s.io (APIServices) in front.
	Aggregator bool
	// PostStartHooks are added to the native server.
	PostStartHooks map[string]genericapiserver.PostStartHookFunc
	// Authenticators follow the server's own (client certificates, the
	// front proxy's headers, then bearer tokens: service accounts, JWT,
	// the token webhook), in order; the first that recognises a request
	// decides who made it.
	Authenticators []AuthenticatorFactory
	// Authorizers follow system:masters in the authorizer chain, in order.
	// None means "system:masters or nothing" (plus public health paths).
	Authorizers []AuthorizerFactory
	// Filters are the layers' steps of every API server's handler chain,
	// in stack order, the first outermost. They come after gcp's own (the
	// workarounds and guards of the API server's handlerChain), nearest
	// the routes, so a request they see has passed gcp's guards.
	Filters []Filter
	// AdmissionPlugins are the admission plugins the composition makes
	// work: gcp's whose APIs it serves (a webhook plugin without
	// admissionregistration would wait forever for its configuration) and
	// the layers' own. Only these can run; they run in the options'
	// recommended order, as --enable-admission-plugins and
	// --disable-admission-plugins select.
	AdmissionPlugins []gcpadmission.Plugin
	// Policy is the RBAC policy reconciled at every start, when the
	// composition serves rbac.authorization.k8s.io: gcp's bootstrap policy
	// and what the layers add for their controllers and users.
	Policy bootstrappolicy.Policy
	// Controllers are the controllers `gcp controllers` and `gcp start`
	// choose from with --controllers.
	Controllers []controllers.Descriptor
}

// Filter is one named step of the API servers' handler chain.
type Filter struct {
	// Name says what the step does; it is unique in a composition.
	Name string
	// Wrap returns next behind the step. c is the configuration of the
	// server whose chain is being built (one of the three of the
	// delegation chain), whose limits a step may read.
	Wrap func(next http.Handler, c *genericapiserver.Config) http.Handler
}

// AuthorizerFactory builds one authorizer of the chain once the server's
// informers exist (an authorizer reads its policy from informer caches).
type AuthorizerFactory func(informers clientgoinformers.SharedInformerFactory) (authz.Named, error)

// AuthenticatorFactory builds one request authenticator once the server's
// informers exist (an authenticator may read its users from informer
// caches).
type AuthenticatorFactory func(informers clientgoinformers.SharedInformerFactory) (authenticator.Request, error)

// GetOpenAPIDefinitions returns gcp's definitions merged with the
// composition's. A name defined more than once keeps its first
// definition, gcp's before the layers': openapi-gen writes the
// k8s.io/apimachinery types a package refers to into its output too (as
// upstream's kube_codegen.sh generates them), and those are gcp's.
func (c Composition) GetOpenAPIDefinitions() common.GetOpenAPIDefinitions {
	extra := c.OpenAPIDefinitions
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		out := openapi.GetOpenAPIDefinitions(ref)
		for _, get := range extra {
			for name, def := range get(ref) {
				if _, ok := out[name]; !ok {
					out[name] = def
				}
			}
		}
		return out
	}
}

// Describe says in a sentence which API groups c serves, for help texts
// ("It serves the API groups core (v1), rbac.authorization.k8s.io and
// apiextensions.k8s.io (CRDs)."), or "" when it serves none. The commands
// of a consumer's stack so describe that stack, not gcp's.
func (c Composition) Describe() string {
	var groups []string
	for _, g := range c.APIGroups {
		if name := g.GroupName(); name != "" {
			groups = append(groups, name)
		} else {
			groups = append(groups, "core (v1)")
		}
	}
	if c.APIExtensions {
		groups = append(groups, "apiextensions.k8s.io (CRDs)")
	}
	if c.Aggregator {
		groups = append(groups, "apiregistration.k8s.io (APIServices)")
	}
	if len(groups) == 0 {
		return ""
	}
	return "It serves the API groups " + sentence(groups) + "."
}

// sentence joins items as a sentence does: "a", "a and b", "a, b and c".
func sentence(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
