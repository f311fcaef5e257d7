// Package satoken issues and verifies bound service account tokens: JWTs
// signed by the control plane's service account key, naming a
// ServiceAccount (and optionally a Secret they are bound to), valid only
// while those objects exist with the same UID. It also serves the OIDC
// discovery documents of the issuer. Upstream keeps the equivalent in
// k8s.io/kubernetes/pkg/serviceaccount.
package satoken

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/util/keyutil"
)

// privateClaims are the Kubernetes claims of a bound token, under
// "kubernetes.io" as upstream.
type privateClaims struct {
	Kubernetes kubernetesClaims `json:"kubernetes.io"`
}

type kubernetesClaims struct {
	Namespace      string `json:"namespace,omitempty"`
	ServiceAccount ref    `json:"serviceaccount"`
	Secret         *ref   `json:"secret,omitempty"`
}

type ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Issuer signs bound service account tokens.
type Issuer struct {
	issuer string
	signer jose.Signer
	now    func() time.Time
}

// NewIssuer returns an issuer named issuer that signs with key (RSA:
// RS256; ECDSA: ES256/384/512 by curve).
func NewIssuer(issuer string, key crypto.Signer) (*Issuer, error) {
	alg, err := algorithm(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("service account signer: %w", err)
	}
	return &Issuer{issuer: issuer, signer: signer, now: time.Now}, nil
}

// IssueToken implements registry.ServiceAccountTokenIssuer.
func (i *Issuer) IssueToken(_ context.Context, sa *corev1.ServiceAccount, bound *corev1.Secret, req *authenticationv1.TokenRequest) error {
	now := i.now()
	exp := now.Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second)
	std := jwt.Claims{
		Issuer:    i.issuer,
		Subject:   serviceaccount.MakeUsername(sa.Namespace, sa.Name),
		Audience:  jwt.Audience(req.Spec.Audiences),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(exp),
		ID:        string(uuid.NewUUID()),
	}
	private := privateClaims{Kubernetes: kubernetesClaims{
		Namespace:      sa.Namespace,
		ServiceAccount: ref{Name: sa.Name, UID: string(sa.UID)},
	}}
	if bound != nil {
		private.Kubernetes.Secret = &ref{Name: bound.Name, UID: string(bound.UID)}
	}
	token, err := jwt.Signed(i.signer).Claims(std).Claims(private).Serialize()
	if err != nil {
		return fmt.Errorf("signing the token: %w", err)
	}
	req.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(exp)}
	return nil
}

// KeyID is the "kid" of a public key: the unpadded base64url SHA-256 of
// its PKIX encoding, as upstream, so tokens name the key that signed them.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("service account key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func algorithm(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
	}
	return "", fmt.Errorf("service account key: unsupported key type %T (want RSA or ECDSA)", pub)
}

// LoadSigningKey reads a PEM private key (RSA or ECDSA).
func LoadSigningKey(file string) (crypto.Signer, error) {
	key, err := keyutil.PrivateKeyFromFile(file)
	if err != nil {
		return nil, fmt.Errorf("service account signing key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("service account signing key %s: not a signing key", file)
	}
	return signer, nil
}

// LoadPublicKeys reads every public key of the PEM files (public or
// private keys, RSA or ECDSA).
func LoadPublicKeys(files ...string) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for _, f := range files {
		ks, err := keyutil.PublicKeysFromFile(f)
		if err != nil {
			return nil, fmt.Errorf("service account key file: %w", err)
		}
		for _, k := range ks {
			keys = append(keys, k)
		}
	}
	return keys, nil
}
