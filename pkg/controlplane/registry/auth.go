package registry

import (
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Auth is the server's own authentication and authorization, for the API
// groups that expose or depend on them: authentication.k8s.io (TokenReview),
// authorization.k8s.io (access reviews), rbac.authorization.k8s.io
// (escalate/bind checks) and core serviceaccounts/token. Any field may be nil
// when the server runs without it; a group that needs a nil field leaves the
// affected resource out.
type Auth struct {
	// Authorizer is the server's authorizer chain (the one requests pass).
	Authorizer authorizer.Authorizer
	// RuleResolver lists what a user may do in a namespace, for
	// SelfSubjectRulesReview.
	RuleResolver authorizer.RuleResolver
	// TokenAuthenticator authenticates bearer tokens (service account
	// tokens), for TokenReview.
	TokenAuthenticator authenticator.Token
	// APIAudiences are the audiences the server identifies as; tokens
	// without an explicit audience are issued for them.
	APIAudiences authenticator.Audiences
	// ServiceAccountTokens issues tokens for serviceaccounts/token.
	ServiceAccountTokens ServiceAccountTokenIssuer
	// MaxTokenExpiration caps requested token lifetimes (0: no cap).
	MaxTokenExpiration time.Duration
}
