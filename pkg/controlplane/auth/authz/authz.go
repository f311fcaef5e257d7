// Package authz builds the API server's authorizer chain from the
// authorizers a composition names: members of system:masters first, then
// each authorizer in order, and, for a control plane without any, the
// public paths every client may read.
package authz

import (
	"context"
	"slices"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/path"
	"k8s.io/apiserver/pkg/authorization/union"
)

// PublicPaths returns the only paths anonymous requests may reach: health
// and version, as kube-apiserver's system:public-info-viewer role allows.
// The authentication options admit anonymous requests to these alone.
func PublicPaths() []string { return []string{"/healthz", "/livez", "/readyz", "/version"} }

// Named is one authorizer of the chain, with the rule resolver that lists
// what it allows (nil when it cannot).
type Named struct {
	Name         string
	Authorizer   authorizer.Authorizer
	RuleResolver authorizer.RuleResolver
}

// NewChain returns the authorizer chain: members of system:masters may
// do anything, then each of authorizers in order; a request none allows is
// forbidden (403). Without authorizers the chain is "system:masters or
// nothing" plus anonymous-readable health and version paths, which is what
// a control plane without RBAC runs.
func NewChain(authorizers ...Named) (authorizer.Authorizer, authorizer.RuleResolver, error) {
	chain := []union.NamedAuthorizer{{AuthorizerName: "system:masters", Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)}}
	var resolvers []authorizer.RuleResolver
	if len(authorizers) == 0 {
		resolvers = append(resolvers, mastersRuleResolver{})
		var public []string
		for _, p := range PublicPaths() {
			public = append(public, p, p+"/*")
		}
		publicAuthz, err := path.NewAuthorizer(public)
		if err != nil {
			return nil, nil, err
		}
		chain = append(chain, union.NamedAuthorizer{AuthorizerName: "public-paths", Authorizer: publicAuthz})
	}
	for _, a := range authorizers {
		chain = append(chain, union.NamedAuthorizer{AuthorizerName: a.Name, Authorizer: a.Authorizer})
		if a.RuleResolver != nil {
			resolvers = append(resolvers, a.RuleResolver)
		}
	}
	authz, err := union.New(chain...)
	if err != nil {
		return nil, nil, err
	}
	return noServerErrors{authz}, union.NewRuleResolvers(resolvers...), nil
}

// mastersRuleResolver lists the rules of the system:masters authorizer:
// everything for members, nothing for anyone else. With RBAC on it is not
// needed: the cluster-admin binding lists the same for system:masters.
type mastersRuleResolver struct{}

func (mastersRuleResolver) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if u == nil || !slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return nil, nil, false, nil
	}
	return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		[]authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
		false, nil
}
