package certificates

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// allowing returns an authorizer that allows u verb on signers named one
// of names, and records the names it was asked about.
func allowing(asked *[]string, verb string, names ...string) authorizer.AuthorizerFunc {
	return func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		*asked = append(*asked, a.GetName())
		if a.GetAPIGroup() != "certificates.k8s.io" || a.GetResource() != "signers" || !a.IsResourceRequest() || a.GetVerb() != verb {
			return authorizer.DecisionNoOpinion, "", nil
		}
		for _, n := range names {
			if a.GetName() == n {
				return authorizer.DecisionAllow, "", nil
			}
		}
		return authorizer.DecisionNoOpinion, "", nil
	}
}

func TestIsAuthorizedForSignerName(t *testing.T) {
	u := &user.DefaultInfo{Name: "alice"}
	for _, tt := range []struct {
		name    string
		allowed []string
		want    bool
		asked   int
	}{
		{"exact", []string{"example.com/signer"}, true, 1},
		{"wildcard", []string{"example.com/*"}, true, 2},
		{"other signer", []string{"example.com/other", "other.com/*"}, false, 2},
		{"nothing", nil, false, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			got := IsAuthorizedForSignerName(context.Background(), allowing(&asked, "approve", tt.allowed...), u, "approve", "example.com/signer")
			if got != tt.want || len(asked) != tt.asked {
				t.Fatalf("got %v after asking %v, want %v after %d", got, asked, tt.want, tt.asked)
			}
		})
	}

	var asked []string
	if IsAuthorizedForSignerName(context.Background(), allowing(&asked, "sign", "example.com/signer"), u, "approve", "example.com/signer") {
		t.Fatal("sign permission allowed approve")
	}
	failing := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", errors.New("broken")
	})
	if IsAuthorizedForSignerName(context.Background(), failing, u, "approve", "example.com/signer") {
		t.Fatal("an authorizer error allowed")
	}
}

func TestSignerPluginValidateInitialization(t *testing.T) {
	a := NewSignerPlugin("Test", nil)
	if err := a.ValidateInitialization(); err == nil || err.Error() != "Test requires an authorizer" {
		t.Fatalf("without authorizer: %v", err)
	}
	var asked []string
	a.SetUnconditionalAuthorizer(allowing(&asked, "x"))
	if err := a.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
}
