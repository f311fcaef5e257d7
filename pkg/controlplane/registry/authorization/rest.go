// Package authorization serves authorization.k8s.io/v1, the access review
// APIs: SubjectAccessReview, LocalSubjectAccessReview,
// SelfSubjectAccessReview and SelfSubjectRulesReview. Nothing is stored;
// each create asks the server's authorizer (or rule resolver) and returns
// its answer, which is what `kubectl auth can-i` uses.
package authorization

import (
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is authorization.k8s.io. Its zero value is ready to use; it
// reads the authorizer and rule resolver from StorageOptions.Auth. The
// access reviews need the authorizer and the rules review the rule
// resolver; a resource whose dependency is nil is not served.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns authorization.k8s.io.
func (APIGroup) GroupName() string { return authorizationv1.GroupName }

// DiscoveryPriorities implements registry.DiscoveryPrioritizer with
// kube-apiserver's priorities for the group.
func (APIGroup) DiscoveryPriorities() map[string]registry.DiscoveryPriority {
	return map[string]registry.DiscoveryPriority{
		"v1": {Group: 17600, Version: 15},
	}
}

// InstallScheme registers the four review types.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, authorizationv1.SchemeGroupVersion,
		&authorizationv1.SubjectAccessReview{},
		&authorizationv1.LocalSubjectAccessReview{},
		&authorizationv1.SelfSubjectAccessReview{},
		&authorizationv1.SelfSubjectRulesReview{},
	)
	return nil
}

// NewRESTStorage builds the review resources that --runtime-config enables.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(authorizationv1.GroupName)
	storage := map[string]rest.Storage{}
	if a := opts.Auth.Authorizer; a != nil {
		storage["subjectaccessreviews"] = &subjectAccessReviewREST{authorizer: a}
		storage["localsubjectaccessreviews"] = &localSubjectAccessReviewREST{authorizer: a}
		storage["selfsubjectaccessreviews"] = &selfSubjectAccessReviewREST{authorizer: a}
	}
	if r := opts.Auth.RuleResolver; r != nil {
		storage["selfsubjectrulesreviews"] = &selfSubjectRulesReviewREST{resolver: r}
	}
	return info, opts.Enabled(&info, authorizationv1.SchemeGroupVersion, storage), nil
}
