// Package authentication serves authentication.k8s.io/v1: TokenReview (is
// this bearer token valid, and whose is it?) and SelfSubjectReview (who am
// I?, for `kubectl auth whoami`). Nothing is stored.
package authentication

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is authentication.k8s.io. Its zero value is ready to use; it
// reads the token authenticator and API audiences from StorageOptions.Auth.
// TokenReview needs the server's token authenticator and is not served
// without one; SelfSubjectReview is always served.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns authentication.k8s.io.
func (APIGroup) GroupName() string { return authenticationv1.GroupName }

// DiscoveryPriorities implements registry.DiscoveryPrioritizer with
// kube-apiserver's priorities for the group.
func (APIGroup) DiscoveryPriorities() map[string]registry.DiscoveryPriority {
	return map[string]registry.DiscoveryPriority{
		"v1": {Group: 17700, Version: 15},
	}
}

// InstallScheme registers the two review types. TokenRequest, the body of
// core's serviceaccounts/token, is registered by the core group that
// serves it.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, authenticationv1.SchemeGroupVersion,
		&authenticationv1.TokenReview{},
		&authenticationv1.SelfSubjectReview{},
	)
	return nil
}

// NewRESTStorage builds the review resources that --runtime-config enables.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(authenticationv1.GroupName)
	storage := map[string]rest.Storage{
		"selfsubjectreviews": &selfSubjectReviewREST{},
	}
	if opts.Auth.TokenAuthenticator != nil {
		storage["tokenreviews"] = &tokenReviewREST{tokens: opts.Auth.TokenAuthenticator, apiAudiences: opts.Auth.APIAudiences}
	}
	return info, opts.Enabled(&info, authenticationv1.SchemeGroupVersion, storage), nil
}

// userInfo is u as the API shows it. Extra is never nil, as upstream.
func userInfo(u user.Info) authenticationv1.UserInfo {
	extra := u.GetExtra()
	out := authenticationv1.UserInfo{
		Username: u.GetName(),
		UID:      u.GetUID(),
		Groups:   u.GetGroups(),
		Extra:    make(map[string]authenticationv1.ExtraValue, len(extra)),
	}
	for k, v := range extra {
		out.Extra[k] = authenticationv1.ExtraValue(v)
	}
	return out
}
