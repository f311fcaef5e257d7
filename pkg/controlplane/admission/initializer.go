package admission

import (
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	webhookinit "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"

	gcpquota "github.com/gcp-project/gcp/pkg/controlplane/quota"
)

// Initializers returns what gcp's plugins need beyond k8s.io/apiserver's
// generic initializer: webhooks get a service resolver and credentials for
// calling out (loopback is the server's own client config), the quota
// plugin its configuration, and the policy plugins the resources they never
// intercept.
func Initializers(loopback *rest.Config, serviceResolver webhook.ServiceResolver, tracer trace.TracerProvider) []admission.PluginInitializer {
	authInfo := webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, loopback, tracer)
	return []admission.PluginInitializer{
		webhookinit.NewPluginInitializer(authInfo, serviceResolver),
		pluginInitializer{quota: gcpquota.AdmissionConfiguration(), excluded: ExcludedFromPolicies()},
	}
}

// pluginInitializer hands gcp's configuration to the plugins that want it.
type pluginInitializer struct {
	quota    quota.Configuration
	excluded []schema.GroupResource
}

// Initialize implements admission.PluginInitializer.
func (i pluginInitializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(initializer.WantsQuotaConfiguration); ok {
		wants.SetQuotaConfiguration(i.quota)
	}
	if wants, ok := plugin.(initializer.WantsExcludedAdmissionResources); ok {
		wants.SetExcludedAdmissionResources(i.excluded)
	}
}

// ExcludedFromPolicies are the resources admission policies (validating
// and mutating) never see, as upstream: reviews that store nothing and that
// a policy could otherwise use to lock everyone out.
func ExcludedFromPolicies() []schema.GroupResource {
	return []schema.GroupResource{
		{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
		{Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
		{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
		{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
		{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	}
}
