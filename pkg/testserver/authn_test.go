package testserver

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gcp-project/gcp/test/oidcprovider"
)

// TestAuthenticationAsGoValue: a test gives the server JWT authenticators
// as a Go value, and a real OpenID provider's ID token logs in.
func TestAuthenticationAsGoValue(t *testing.T) {
	t.Parallel()
	idp := oidcprovider.Start(t, oidcprovider.Options{})
	client := idp.Client(t)
	empty := ""
	s := Start(t, Options{Authentication: &apiserverapi.AuthenticationConfiguration{JWT: []apiserverapi.JWTAuthenticator{{
		Issuer: apiserverapi.Issuer{URL: idp.IssuerURL, Audiences: []string{client}, CertificateAuthority: string(idp.CAData)},
		ClaimMappings: apiserverapi.ClaimMappings{
			Username: apiserverapi.PrefixedClaimOrExpression{Claim: "email", Prefix: &empty},
			Groups:   apiserverapi.PrefixedClaimOrExpression{Claim: "groups", Prefix: &empty},
		},
	}}}})
	token := idp.IDToken(t, oidcprovider.Login{ClientID: client, Subject: "tester", Claims: map[string]any{
		"email": "tester@example.com", "groups": []string{"qa"},
	}})
	cfg := rest.AnonymousClientConfig(s.AdminConfig)
	cfg.BearerToken = token
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "tester@example.com" || len(u.Groups) == 0 || u.Groups[0] != "qa" {
		t.Fatalf("user %+v", u)
	}
}
