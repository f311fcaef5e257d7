// Package authn builds the token authenticators that plug gcp into an
// organization's identity: JWT authenticators (OIDC ID tokens and other
// JWTs from configured issuers, AuthenticationConfiguration's jwt section,
// replaceable while the server runs) and a token webhook (TokenReview).
// Both are k8s.io/apiserver's own implementations; this package gives them
// their lifecycle: started with the server, stopped with it, swapped on a
// reload.
package authn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
	"k8s.io/klog/v2"
)

// healthyWait bounds how long a reload waits for new issuers' keys before
// it swaps them in anyway: an issuer that is down must not keep a valid
// configuration out (its tokens fail until it is reachable, as at start).
const healthyWait = 10 * time.Second

// JWTOptions adjust the JWT authenticators.
type JWTOptions struct {
	// APIServerID labels the authenticators' metrics.
	APIServerID string
	// DisallowedIssuers are issuers no JWT authenticator may use: the
	// service account issuers, whose tokens the server verifies itself.
	DisallowedIssuers []string
	// SupportedSigningAlgs are the signing algorithms accepted; empty
	// means every algorithm upstream allows (the structured
	// configuration's behaviour; the legacy --oidc-signing-algs flag
	// narrows it).
	SupportedSigningAlgs []string
	// APIAudiences are the server's own audiences, which JWT
	// authenticators ignore: each checks its own.
	APIAudiences authenticator.Audiences
}

// JWT authenticates bearer tokens with the jwt authenticators of an
// AuthenticationConfiguration. Nothing runs until Run: before it (and
// while an issuer's keys have not been fetched) its tokens are not
// recognised, and other authenticators still answer. Replace swaps the set
// while serving.
type JWT struct {
	opts     JWTOptions
	compiler authenticationcel.Compiler

	mu      sync.Mutex
	initial []apiserverapi.JWTAuthenticator
	ctx     context.Context // Run's; nil before Run
	cancel  context.CancelFunc
	current atomic.Pointer[jwtSet]
}

// jwtSet is one configuration's authenticators, running until cancel.
type jwtSet struct {
	token  authenticator.Token
	health []oidc.AuthenticatorTokenWithHealthCheck
	cancel context.CancelFunc
}

var _ authenticator.Token = &JWT{}

// NewJWT returns JWT authenticators for authenticators, not yet running.
// The configuration is validated as the file's loader does; an error names
// the field.
func NewJWT(authenticators []apiserverapi.JWTAuthenticator, o JWTOptions) (*JWT, error) {
	j := &JWT{opts: o, compiler: authenticationcel.NewDefaultCompiler(), initial: authenticators}
	if err := j.validate(authenticators); err != nil {
		return nil, err
	}
	return j, nil
}

// validate checks authenticators as oidc.New will, so that a mistake is
// reported when the configuration is read, not when the server runs.
func (j *JWT) validate(authenticators []apiserverapi.JWTAuthenticator) error {
	return ValidateConfig(j.compiler, &apiserverapi.AuthenticationConfiguration{JWT: authenticators}, j.opts.DisallowedIssuers)
}

// AuthenticateToken tries the token against the authenticators in place.
func (j *JWT) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	set := j.current.Load()
	if set == nil || set.token == nil {
		return nil, false, nil
	}
	return set.token.AuthenticateToken(ctx, token)
}

// Run starts the authenticators given to NewJWT; they fetch their
// issuers' discovery documents and keys in the background (an issuer
// that is down is retried, as upstream does) until ctx is done.
func (j *JWT) Run(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ctx != nil {
		return errors.New("JWT authenticators already running")
	}
	j.ctx, j.cancel = context.WithCancel(ctx)
	set, err := j.build(j.initial)
	if err != nil {
		j.cancel()
		return err
	}
	j.current.Store(set)
	context.AfterFunc(j.ctx, func() {
		if old := j.current.Swap(nil); old != nil {
			old.cancel()
		}
	})
	return nil
}

// Replace swaps in authenticators: they are built, given up to ten
// seconds to fetch their issuers' keys, and then serve, and the old ones
// stop. Invalid authenticators are refused and the old ones stay.
func (j *JWT) Replace(authenticators []apiserverapi.JWTAuthenticator) error {
	if err := j.validate(authenticators); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ctx == nil {
		j.initial = authenticators
		return nil
	}
	if j.ctx.Err() != nil {
		return j.ctx.Err()
	}
	set, err := j.build(authenticators)
	if err != nil {
		return err
	}
	if err := set.waitHealthy(j.ctx, healthyWait); err != nil {
		klog.FromContext(j.ctx).Info("New JWT authenticators not ready yet; using them anyway, their tokens fail until their issuers answer", "err", err)
	}
	if old := j.current.Swap(set); old != nil {
		old.cancel()
	}
	return nil
}

// build starts the authenticators of one configuration under j.ctx.
func (j *JWT) build(authenticators []apiserverapi.JWTAuthenticator) (*jwtSet, error) {
	ctx, cancel := context.WithCancel(j.ctx)
	set := &jwtSet{cancel: cancel}
	algs := j.opts.SupportedSigningAlgs
	if len(algs) == 0 {
		algs = oidc.AllValidSigningAlgorithms()
	}
	var tokens []authenticator.Token
	for i, a := range authenticators {
		ca := caBundle(a.Issuer.CertificateAuthority)
		var provider oidc.CAContentProvider
		if len(ca) > 0 {
			provider = ca
		}
		t, err := oidc.New(ctx, oidc.Options{
			JWTAuthenticator:     a,
			CAContentProvider:    provider,
			Compiler:             j.compiler,
			SupportedSigningAlgs: algs,
			DisallowedIssuers:    j.opts.DisallowedIssuers,
			APIServerID:          j.opts.APIServerID,
		})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("jwt[%d] (issuer %s): %w", i, a.Issuer.URL, err)
		}
		set.health = append(set.health, t)
		tokens = append(tokens, t)
	}
	if len(tokens) > 0 {
		set.token = authenticator.WrapAudienceAgnosticToken(j.opts.APIAudiences, tokenunion.New(tokens...))
	}
	return set, nil
}

// waitHealthy waits until every authenticator of s has its issuer's keys,
// or timeout.
func (s *jwtSet) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var errs []error
		for _, h := range s.health {
			if err := h.HealthCheck(); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(errs...)
		case <-tick.C:
		}
	}
}

// caBundle is a CA bundle in PEM, as an oidc.CAContentProvider.
type caBundle []byte

func (c caBundle) CurrentCABundleContent() []byte { return c }
