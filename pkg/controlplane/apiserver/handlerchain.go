package apiserver

import (
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/guards"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/workarounds"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/nesting"
)

// Filter is one named step of the API server's handler chain: gcp's, a
// layer's (composition.Filters), or one a caller adds to Config.Filters.
type Filter = composition.Filter

// handlerChain is gcp's part of the handler chain, then the composition's
// Filters, outermost first: a request meets these steps in this order,
// after k8s.io/apiserver's own (DefaultBuildHandlerChain: panic recovery,
// authentication, audit, authorization, API Priority and Fairness,
// timeouts...) and before the server's routes. The workarounds that
// refuse a request by its URL or guard its body's reading come first,
// then the guards, before anything decodes a body; the workarounds that
// rewrite an answer come last of gcp's, so that they see the routes'.
func (c *Config) handlerChain() []Filter {
	codecs := c.Codecs
	return append([]Filter{
		{Name: "namespace-path", Wrap: func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithNamespaceCheck(next, codecs)
		}},
		{Name: "watch-timeout", Wrap: func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithWatchTimeoutCheck(next, codecs)
		}},
		{Name: "unreadable-body", Wrap: func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithUnreadableBodyAsBadRequest(next)
		}},
		{Name: "protobuf-body", Wrap: func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithProtobufBodyRecovery(next, codecs)
		}},
		{Name: "nesting-limit", Wrap: func(next http.Handler, c *genericapiserver.Config) http.Handler {
			return guards.WithNestingLimit(next, codecs, nesting.Limit, c.MaxRequestBodyBytes)
		}},
		{Name: "evaluation-budget", Wrap: func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return guards.WithEvalBudget(next, codecs, guards.EvaluationBudget)
		}},
		{Name: "patch-input-errors", Wrap: func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithPatchInputErrors(next, codecs)
		}},
		{Name: "resource-version", Wrap: func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithResourceVersionCheck(next, codecs)
		}},
		{Name: "version", Wrap: func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithVersion(next)
		}},
	}, c.Composition.Filters...)
}

// buildHandlerChain is every server's BuildHandlerChainFunc: handler behind
// c.Filters, the first outermost, behind k8s.io/apiserver's default chain.
// It reads c.Filters when a server is built, so steps a caller adds after
// NewConfig are in it.
func (c *Config) buildHandlerChain(handler http.Handler, gc *genericapiserver.Config) http.Handler {
	return genericapiserver.DefaultBuildHandlerChain(wrapFilters(handler, gc, c.Filters), gc)
}

// wrapFilters returns handler behind filters, the first outermost.
func wrapFilters(handler http.Handler, gc *genericapiserver.Config, filters []Filter) http.Handler {
	for i := len(filters) - 1; i >= 0; i-- {
		handler = filters[i].Wrap(handler, gc)
	}
	return handler
}
