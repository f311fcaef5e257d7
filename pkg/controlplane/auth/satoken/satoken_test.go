package satoken

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// mapGetter holds service accounts and secrets by namespace/name.
type mapGetter map[string]metav1.Object

func (m mapGetter) GetServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if o, ok := m["sa/"+ns+"/"+name]; ok {
		return o.(*corev1.ServiceAccount), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

func (m mapGetter) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if o, ok := m["secret/"+ns+"/"+name]; ok {
		return o.(*corev1.Secret), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

const issuerURL = "https://gcp.example.com"

func issue(t *testing.T, key crypto.Signer, now time.Time, sa *corev1.ServiceAccount, secret *corev1.Secret, audiences ...string) string {
	t.Helper()
	iss, err := NewIssuer(issuerURL, key)
	if err != nil {
		t.Fatal(err)
	}
	iss.now = func() time.Time { return now }
	if len(audiences) == 0 {
		audiences = []string{issuerURL}
	}
	seconds := int64(3600)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: &seconds}}
	if err := iss.IssueToken(context.Background(), sa, secret, req); err != nil {
		t.Fatal(err)
	}
	return req.Status.Token
}

func TestTokens(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "robot", UID: "sa-uid"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "secret-uid"}}
	getter := mapGetter{"sa/ns/robot": sa, "secret/ns/s": secret}
	a := NewAuthenticator([]string{issuerURL}, []crypto.PublicKey{rsaKey.Public(), ecKey.Public()}, authenticator.Audiences{issuerURL}, getter)
	now := time.Now()

	for _, tc := range []struct {
		name    string
		token   string
		getter  mapGetter
		ok      bool
		errPart string
	}{
		{"rsa", issue(t, rsaKey, now, sa, nil), getter, true, ""},
		{"ecdsa", issue(t, ecKey, now, sa, nil), getter, true, ""},
		{"bound to a secret", issue(t, rsaKey, now, sa, secret), getter, true, ""},
		{"unknown key", issue(t, otherKey, now, sa, nil), getter, false, "signature"},
		{"expired", issue(t, rsaKey, now.Add(-2*time.Hour), sa, nil), getter, false, "expired"},
		{"not yet valid", issue(t, rsaKey, now.Add(time.Hour), sa, nil), getter, false, "not valid yet"},
		{"other audience", issue(t, rsaKey, now, sa, nil, "https://other"), getter, false, "audiences"},
		{"deleted service account", issue(t, rsaKey, now, sa, nil), mapGetter{}, false, "deleted"},
		{"recreated service account", issue(t, rsaKey, now, sa, nil), mapGetter{"sa/ns/robot": &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{UID: "new"}}}, false, "UID"},
		{"deleted secret", issue(t, rsaKey, now, sa, secret), mapGetter{"sa/ns/robot": sa}, false, "deleted"},
		{"not a jwt", "abc", getter, false, ""},
		{"garbage jwt", "a.b.c", getter, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.getter = tc.getter
			resp, ok, err := a.AuthenticateToken(context.Background(), tc.token)
			if ok != tc.ok {
				t.Fatalf("ok = %v, err %v", ok, err)
			}
			if tc.ok {
				if resp.User.GetName() != "system:serviceaccount:ns:robot" || resp.User.GetUID() != "sa-uid" {
					t.Fatalf("user %+v", resp.User)
				}
				return
			}
			if tc.errPart == "" && err != nil {
				t.Fatalf("a token that is not ours must be left to others, got %v", err)
			}
			if tc.errPart != "" && (err == nil || !strings.Contains(err.Error(), tc.errPart)) {
				t.Fatalf("err %v, want it to mention %q", err, tc.errPart)
			}
		})
	}
}
