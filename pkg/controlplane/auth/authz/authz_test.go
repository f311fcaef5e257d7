package authz

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

var (
	master    = &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	alice     = &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	anonymous = &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
)

func resource(u user.Info) authorizer.Attributes {
	return authorizer.AttributesRecord{User: u, Verb: "get", Resource: "configmaps", Namespace: "default", ResourceRequest: true}
}

func nonResource(u user.Info, p string) authorizer.Attributes {
	return authorizer.AttributesRecord{User: u, Verb: "get", Path: p}
}

// allowOnly allows one user everything and has no opinion on anyone else.
func allowOnly(name string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		if attrs.GetUser().GetName() == name {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

func TestChainWithoutAuthorizers(t *testing.T) {
	chain, resolver, err := NewChain()
	if err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, chain, []decision{
		{"system:masters reads a resource", resource(master), authorizer.DecisionAllow},
		{"anyone else may not", resource(alice), authorizer.DecisionNoOpinion},
		{"anonymous reads /healthz", nonResource(anonymous, "/healthz"), authorizer.DecisionAllow},
		{"anonymous reads a named readiness check", nonResource(anonymous, "/readyz/etcd"), authorizer.DecisionAllow},
		{"anonymous reads /version", nonResource(anonymous, "/version"), authorizer.DecisionAllow},
		{"anonymous may not read /metrics", nonResource(anonymous, "/metrics"), authorizer.DecisionNoOpinion},
		{"anonymous may not read a resource", resource(anonymous), authorizer.DecisionNoOpinion},
	})

	rules, pathRules, _, err := resolver.RulesFor(context.Background(), master, "default")
	if err != nil || len(rules) != 1 || len(pathRules) != 1 || !slices.Equal(rules[0].GetVerbs(), []string{"*"}) {
		t.Errorf("system:masters' rules: %v %v (error %v), want everything", rules, pathRules, err)
	}
	if rules, pathRules, _, _ := resolver.RulesFor(context.Background(), alice, "default"); len(rules)+len(pathRules) != 0 {
		t.Errorf("alice's rules: %v %v, want none", rules, pathRules)
	}
}

func TestChainWithAuthorizers(t *testing.T) {
	chain, _, err := NewChain(Named{Name: "alice-only", Authorizer: allowOnly("alice")})
	if err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, chain, []decision{
		{"system:masters still comes first", resource(master), authorizer.DecisionAllow},
		{"the composition's authorizer allows alice", resource(alice), authorizer.DecisionAllow},
		// With authorizers, the public paths are theirs to allow (RBAC's
		// system:public-info-viewer), not the chain's.
		{"anonymous reads /healthz only if an authorizer says so", nonResource(anonymous, "/healthz"), authorizer.DecisionNoOpinion},
	})
}

// decision is a request and the decision the chain must reach on it.
type decision struct {
	name  string
	attrs authorizer.Attributes
	want  authorizer.Decision
}

func checkDecisions(t *testing.T, chain authorizer.Authorizer, cases []decision) {
	t.Helper()
	for _, tc := range cases {
		if got, _, err := chain.Authorize(context.Background(), tc.attrs); err != nil || got != tc.want {
			t.Errorf("%s: decision %v (error %v), want %v", tc.name, got, err, tc.want)
		}
	}
}
