package options

import (
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/path"
	"k8s.io/apiserver/pkg/authorization/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// NewMastersOnlyAuthorizer returns the authorizer used until RBAC is served:
// members of system:masters may do anything, everyone may read the public
// health and version paths, and nothing else is allowed (403, as
// upstream when no authorizer has an opinion).
func NewMastersOnlyAuthorizer() (authorizer.Authorizer, error) {
	var public []string
	for _, p := range publicPaths {
		public = append(public, p, p+"/*")
	}
	publicAuthz, err := path.NewAuthorizer(public)
	if err != nil {
		return nil, err
	}
	return union.New(
		union.NamedAuthorizer{AuthorizerName: "system:masters", Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)},
		union.NamedAuthorizer{AuthorizerName: "public-paths", Authorizer: publicAuthz},
	)
}

// ApplyMastersOnlyAuthorization sets the masters-only authorizer on authz.
func ApplyMastersOnlyAuthorization(authz *genericapiserver.AuthorizationInfo) error {
	a, err := NewMastersOnlyAuthorizer()
	if err != nil {
		return err
	}
	authz.Authorizer = a
	return nil
}
