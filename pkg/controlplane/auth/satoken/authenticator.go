package satoken

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Getter reads the objects a token is bound to.
type Getter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// Authenticator verifies bound service account tokens of its issuers.
type Authenticator struct {
	issuers   []string
	keys      []crypto.PublicKey
	audiences authenticator.Audiences
	getter    Getter
	now       func() time.Time
}

var _ authenticator.Token = &Authenticator{}

// NewAuthenticator returns an authenticator for tokens of issuers signed by
// one of keys. Tokens must name one of the request's audiences (apiAudiences
// when the request carries none), and their ServiceAccount (and bound
// Secret) must still exist with the same UID.
func NewAuthenticator(issuers []string, keys []crypto.PublicKey, apiAudiences authenticator.Audiences, getter Getter) *Authenticator {
	registerMetrics.Do(func() { legacyregistry.MustRegister(validTokens) })
	return &Authenticator{issuers: issuers, keys: keys, audiences: apiAudiences, getter: getter, now: time.Now}
}

var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.ES384, jose.ES512}

// AuthenticateToken implements authenticator.Token. A token that is not a
// JWT of one of our issuers is not ours (false, no error), so the request
// ends unauthenticated (401) unless another authenticator knows it.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if strings.Count(token, ".") != 2 {
		return nil, false, nil
	}
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		return nil, false, nil
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil || !slices.Contains(a.issuers, unverified.Issuer) {
		return nil, false, nil
	}

	var std jwt.Claims
	var private privateClaims
	verified := false
	for _, k := range a.keys {
		if err := tok.Claims(k, &std, &private); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, false, errors.New("invalid bearer token: signature does not verify")
	}
	if err := std.Validate(jwt.Expected{Time: a.now()}); err != nil {
		return nil, false, fmt.Errorf("invalid bearer token: %w", err)
	}
	wanted, ok := authenticator.AudiencesFrom(ctx)
	if !ok || len(wanted) == 0 {
		wanted = a.audiences
	}
	matched := wanted.Intersect(authenticator.Audiences(std.Audience))
	if len(matched) == 0 {
		return nil, false, fmt.Errorf("invalid bearer token: token audiences %q are invalid for the target audiences %q", []string(std.Audience), []string(wanted))
	}

	k := private.Kubernetes
	if k.Namespace == "" || k.ServiceAccount.Name == "" || k.ServiceAccount.UID == "" || std.Subject != serviceaccount.MakeUsername(k.Namespace, k.ServiceAccount.Name) {
		return nil, false, errors.New("invalid bearer token: not a bound service account token")
	}
	sa, err := a.getter.GetServiceAccount(ctx, k.Namespace, k.ServiceAccount.Name)
	if err := live(err, sa, k.ServiceAccount.UID, "service account", k.Namespace+"/"+k.ServiceAccount.Name); err != nil {
		return nil, false, err
	}
	if s := k.Secret; s != nil {
		secret, err := a.getter.GetSecret(ctx, k.Namespace, s.Name)
		if err := live(err, secret, s.UID, "secret", k.Namespace+"/"+s.Name); err != nil {
			return nil, false, err
		}
	}

	extra := map[string][]string{}
	if std.ID != "" {
		extra[user.CredentialIDKey] = []string{"JTI=" + std.ID}
	}
	validTokens.Inc()
	return &authenticator.Response{
		User: &user.DefaultInfo{
			Name:   std.Subject,
			UID:    k.ServiceAccount.UID,
			Groups: serviceaccount.MakeGroupNames(k.Namespace),
			Extra:  extra,
		},
		Audiences: matched,
	}, true, nil
}

// live returns an error unless obj exists, is not being deleted and has
// uid: a token outlives neither the object nor its re-creation.
func live(err error, obj metav1.Object, uid, what, name string) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("invalid bearer token: %s %s has been deleted", what, name)
	case err != nil:
		return fmt.Errorf("invalid bearer token: looking up %s %s: %w", what, name, err)
	case string(obj.GetUID()) != uid:
		return fmt.Errorf("invalid bearer token: %s %s has UID %s, the token was issued for %s", what, name, obj.GetUID(), uid)
	case obj.GetDeletionTimestamp() != nil:
		return fmt.Errorf("invalid bearer token: %s %s is being deleted", what, name)
	}
	return nil
}
