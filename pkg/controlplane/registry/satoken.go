package registry

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
)

// ServiceAccountTokenIssuer issues bound service account tokens
// (serviceaccounts/token). pkg/controlplane/auth/satoken implements it.
type ServiceAccountTokenIssuer interface {
	// IssueToken fills req.Status with a token for sa, for the audiences
	// and expiration of req.Spec (already validated and defaulted), bound to
	// the object of req.Spec.BoundObjectRef when set (bound is its current
	// UID-carrying object: a *corev1.Secret, or nil).
	IssueToken(ctx context.Context, sa *corev1.ServiceAccount, bound *corev1.Secret, req *authenticationv1.TokenRequest) error
}
