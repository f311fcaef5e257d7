package apiserver

import (
	"fmt"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/authz"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/satoken"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

// applyAuth is NewConfig's authentication and authorization stage: service
// account tokens, the composition's and the options' authenticators, the
// authorizer chain, and the loopback client's token in front of both.
func (c *Config) applyAuth() error {
	gc := c.Generic
	o := c.Options
	tokens, err := o.Authentication.ServiceAccounts.New(func() satoken.Getter { return satoken.NewGetter(c.Informers.Core().V1(), c.Client) })
	if err != nil {
		return fmt.Errorf("service account tokens: %w", err)
	}
	c.ServiceAccountTokens = tokens
	var tokenAuthenticator authenticator.Token
	if tokens != nil {
		tokenAuthenticator = tokens.Authenticator
	}
	var extra []authenticator.Request
	for _, f := range c.Composition.Authenticators {
		a, err := f(c.Informers)
		if err != nil {
			return fmt.Errorf("authentication: %w", err)
		}
		extra = append(extra, a)
	}
	if err := o.Authentication.ApplyTo(gc, tokenAuthenticator, extra...); err != nil {
		return fmt.Errorf("authentication: %w", err)
	}
	if err := c.applyAuthorization(); err != nil {
		return fmt.Errorf("authorization: %w", err)
	}
	// The loopback client's token authenticates as system:apiserver in
	// system:masters; this wraps the authenticator and authorizer above.
	genericapiserver.AuthorizeClientBearerToken(gc.LoopbackClientConfig, &gc.Authentication, &gc.Authorization)
	return nil
}

// registryAuth is what the auth-facing API groups get.
func (c *Config) registryAuth() registry.Auth {
	auth := registry.Auth{
		Authorizer:         c.Generic.Authorization.Authorizer,
		RuleResolver:       c.RuleResolver,
		APIAudiences:       c.Generic.Authentication.APIAudiences,
		MaxTokenExpiration: c.Options.Authentication.ServiceAccounts.MaxTokenExpiration,
	}
	if t := c.ServiceAccountTokens; t != nil {
		auth.TokenAuthenticator = t.Authenticator
		auth.ServiceAccountTokens = t.Issuer
	}
	return auth
}

// applyAuthorization builds the authorizer chain: the composition's
// authorizers and the options' Go ones, and those the options configure
// (pkg/controlplane/auth/authz). A configuration file is reloaded by a
// post-start hook while the server runs.
func (c *Config) applyAuthorization() error {
	var named []authz.Named
	for _, f := range c.Composition.Authorizers {
		a, err := f(c.Informers)
		if err != nil {
			return err
		}
		named = append(named, a)
	}
	o := c.Options.Authorization
	if o != nil {
		named = append(named, o.Authorizers...)
	}
	cfg, data, err := o.Configuration()
	if err != nil {
		return err
	}
	if cfg == nil {
		chain, resolver, err := authz.NewChain(named...)
		if err != nil {
			return err
		}
		c.Generic.Authorization.Authorizer = chain
		c.RuleResolver = resolver
		return nil
	}
	chain, err := authz.NewReloadable(authz.Builder{Own: named, WebhookRetryBackoff: o.WebhookRetryBackoff}, cfg, c.Generic.APIServerID)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Source(), err)
	}
	c.Generic.Authorization.Authorizer = chain
	c.RuleResolver = chain
	if o.ConfigFile != "" {
		file := o.ConfigFile
		c.Generic.AddPostStartHookOrDie("authorization-config-reload", func(ctx genericapiserver.PostStartHookContext) error {
			go chain.Watch(ctx, file, data)
			return nil
		})
	}
	return nil
}
