package integration

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
	"github.com/gcp-project/gcp/test/poll"
)

func createServiceAccount(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.ServiceAccount {
	t.Helper()
	sa, err := c.CoreV1().ServiceAccounts(ns).Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

func requestToken(t *testing.T, c kubernetes.Interface, ns, name string, spec authenticationv1.TokenRequestSpec) string {
	t.Helper()
	tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// bearerStatus is the status of GET path with token.
func bearerStatus(t *testing.T, s *testserver.Server, token, path string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpsClient(t, s, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitStatus(t *testing.T, s *testserver.Server, token, path string, want int) {
	t.Helper()
	poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "status "+http.StatusText(want)+" for "+path, func() bool { return bearerStatus(t, s, token, path) == want })
}

// signWith signs claims with key, as a forger or another cluster would.
func signWith(t *testing.T, key any, claims ...any) string {
	t.Helper()
	alg := jose.RS256
	if _, ok := key.(*ecdsa.PrivateKey); ok {
		alg = jose.ES256 // a test server's key (pkg/testserver/keys.go)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := jwt.Signed(signer)
	for _, c := range claims {
		b = b.Claims(c)
	}
	token, err := b.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// TestServiceAccountTokens: tokens from serviceaccounts/token authenticate
// as the service account, are authorized by RBAC, and stop working when
// the account or bound secret goes; forged ones never work.
func TestServiceAccountTokens(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	createNamespace(t, s.Client, "team-a")
	sa := createServiceAccount(t, s.Client, "team-a", "robot")
	token := requestToken(t, s.Client, "team-a", "robot", authenticationv1.TokenRequestSpec{})
	const cms = "/api/v1/namespaces/team-a/configmaps"

	if code := bearerStatus(t, s, token, cms); code != http.StatusForbidden {
		t.Fatalf("unbound service account: want 403, got %d", code)
	}
	createRoleBinding(t, s.Client, "team-a", "robot-view", "ClusterRole", "view", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "robot", Namespace: "team-a"})
	waitStatus(t, s, token, cms, http.StatusOK)

	t.Run("valid tokens are counted", func(t *testing.T) {
		// kube-apiserver's counter, by its name; process-wide, so at least ours.
		body, err := s.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`\nserviceaccount_valid_tokens_total ([0-9.e+]+)\n`).FindSubmatch(body)
		if m == nil || string(m[1]) == "0" {
			t.Errorf("/metrics: serviceaccount_valid_tokens_total is %q, want at least 1", m)
		}
	})

	t.Run("whoami and TokenReview", func(t *testing.T) {
		cfg := rest.AnonymousClientConfig(s.AdminConfig)
		cfg.BearerToken = token
		me, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if u := me.Status.UserInfo; u.Username != "system:serviceaccount:team-a:robot" || u.UID != string(sa.UID) ||
			!strings.Contains(strings.Join(u.Groups, ","), "system:serviceaccounts:team-a") || !strings.HasPrefix(strings.Join(u.Extra["authentication.kubernetes.io/credential-id"], ""), "JTI=") {
			t.Fatalf("user info %+v", u)
		}
		r, err := s.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil || !r.Status.Authenticated || r.Status.User.Username != "system:serviceaccount:team-a:robot" {
			t.Fatalf("TokenReview: %+v %v", r, err)
		}
		r, err = s.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "garbage"}}, metav1.CreateOptions{})
		if err != nil || r.Status.Authenticated {
			t.Fatalf("TokenReview of garbage: %+v %v", r, err)
		}
	})

	t.Run("forged, expired and foreign tokens are 401", func(t *testing.T) {
		key, err := keyutil.PrivateKeyFromFile(s.PKI.ServiceAccountKey)
		if err != nil {
			t.Fatal(err)
		}
		other, err := pki.Ensure(pki.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		otherKey, err := keyutil.PrivateKeyFromFile(other.ServiceAccountKey)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		valid := jwt.Claims{Issuer: s.URL, Subject: "system:serviceaccount:team-a:robot", Audience: jwt.Audience{s.URL},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
		private := map[string]any{"kubernetes.io": map[string]any{"namespace": "team-a", "serviceaccount": map[string]any{"name": "robot", "uid": string(sa.UID)}}}
		if code := bearerStatus(t, s, signWith(t, key, valid, private), cms); code != http.StatusOK {
			t.Fatalf("a correctly signed token should work (the test's forger is sound): %d", code)
		}
		expired := valid
		expired.IssuedAt, expired.NotBefore, expired.Expiry = jwt.NewNumericDate(now.Add(-3*time.Hour)), jwt.NewNumericDate(now.Add(-3*time.Hour)), jwt.NewNumericDate(now.Add(-2*time.Hour))
		wrongAudience := valid
		wrongAudience.Audience = jwt.Audience{"https://elsewhere.example.com"}
		otherIssuer := valid
		otherIssuer.Issuer = "https://elsewhere.example.com"
		wrongUID := map[string]any{"kubernetes.io": map[string]any{"namespace": "team-a", "serviceaccount": map[string]any{"name": "robot", "uid": "not-the-uid"}}}
		parts := strings.Split(token, ".")
		for name, bad := range map[string]string{
			"signed by another key":     signWith(t, otherKey, valid, private),
			"expired":                   signWith(t, key, expired, private),
			"wrong audience":            signWith(t, key, wrongAudience, private),
			"unknown issuer":            signWith(t, key, otherIssuer, private),
			"wrong service account uid": signWith(t, key, valid, wrongUID),
			"tampered payload":          parts[0] + "." + strings.TrimRight(parts[1], "=") + "x." + parts[2],
			"tampered signature":        parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-4] + "AAAA",
			"not a jwt":                 "hello",
			"empty segments":            "..",
		} {
			if code := bearerStatus(t, s, bad, cms); code != http.StatusUnauthorized {
				t.Errorf("%s: want 401, got %d", name, code)
			}
		}
	})

	t.Run("token request validation", func(t *testing.T) {
		short := int64(60)
		_, err := s.Client.CoreV1().ServiceAccounts("team-a").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &short}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.expirationSeconds") {
			t.Errorf("60s token: want 422 on spec.expirationSeconds, got %v", err)
		}
		_, err = s.Client.CoreV1().ServiceAccounts("team-a").CreateToken(ctx, "nobody", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("missing service account: want 404, got %v", err)
		}
		_, err = s.Client.CoreV1().ServiceAccounts("team-a").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p"}}}, metav1.CreateOptions{})
		if !apierrors.IsBadRequest(err) {
			t.Errorf("bound to a pod: want 400, got %v", err)
		}
		_, err = s.Client.CoreV1().ServiceAccounts("team-a").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "missing"}}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `secrets "missing" not found`) {
			t.Errorf("bound to a missing secret: want 404 naming the secret, got %v", err)
		}
	})

	t.Run("a token bound to a secret dies with it", func(t *testing.T) {
		secret, err := s.Client.CoreV1().Secrets("team-a").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "binding"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bound := requestToken(t, s.Client, "team-a", "robot", authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "binding", UID: secret.UID}})
		if code := bearerStatus(t, s, bound, cms); code != http.StatusOK {
			t.Fatalf("bound token: want 200, got %d", code)
		}
		if err := s.Client.CoreV1().Secrets("team-a").Delete(ctx, "binding", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, s, bound, cms, http.StatusUnauthorized)
	})

	t.Run("OIDC discovery for service accounts only", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/.well-known/openid-configuration", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := httpsClient(t, s, nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || doc.Issuer != s.URL || doc.JWKSURI != s.URL+"/openid/v1/jwks" {
			t.Fatalf("openid-configuration: %d %+v %v", resp.StatusCode, doc, err)
		}
		if code := bearerStatus(t, s, token, "/openid/v1/jwks"); code != http.StatusOK {
			t.Fatalf("jwks: %d", code)
		}
		if code := getStatus(t, httpsClient(t, s, nil), s.URL+"/openid/v1/jwks"); code != http.StatusUnauthorized {
			t.Fatalf("anonymous jwks: want 401, got %d", code)
		}
		if _, err := userClient(t, s, "alice").Discovery().RESTClient().Get().AbsPath("/openid/v1/jwks").DoRaw(ctx); !apierrors.IsForbidden(err) {
			t.Fatalf("alice jwks: want 403, got %v", err)
		}
	})

	t.Run("a deleted service account's tokens stop working", func(t *testing.T) {
		if err := s.Client.CoreV1().ServiceAccounts("team-a").Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, s, token, cms, http.StatusUnauthorized)
		// Re-creating the account does not revive old tokens.
		createServiceAccount(t, s.Client, "team-a", "robot")
		if code := bearerStatus(t, s, token, cms); code != http.StatusUnauthorized {
			t.Fatalf("token of a re-created account: want 401, got %d", code)
		}
	})
}

// TestTokenExpirationCap: --service-account-max-token-expiration cuts
// longer requests down, as upstream.
func TestTokenExpirationCap(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{
		Stack:     layering.Generic(),
		APIServer: func(o *options.Options) { o.Authentication.ServiceAccounts.MaxTokenExpiration = time.Hour },
	})
	createServiceAccount(t, s.Client, "default", "robot")
	day := int64(24 * 3600)
	tr, err := s.Client.CoreV1().ServiceAccounts("default").CreateToken(context.Background(), "robot",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &day}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *tr.Spec.ExpirationSeconds != 3600 || time.Until(tr.Status.ExpirationTimestamp.Time) > time.Hour+time.Minute {
		t.Fatalf("expiration %d s, at %s: want capped to 1h", *tr.Spec.ExpirationSeconds, tr.Status.ExpirationTimestamp)
	}
}
