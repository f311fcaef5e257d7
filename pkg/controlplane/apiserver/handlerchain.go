package apiserver

import (
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/guards"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/workarounds"
	"github.com/gcp-project/gcp/pkg/controlplane/nesting"
)

// Filter is one named step of the API server's handler chain.
type Filter struct {
	// Name says what the step does, for a reader and for a caller that
	// inserts its own step next to one of gcp's.
	Name string
	// Wrap returns next behind the step. c is the configuration of the
	// server whose chain is being built (one of the three of the delegation
	// chain), whose limits a step may read.
	Wrap func(next http.Handler, c *genericapiserver.Config) http.Handler
}

// handlerChain is gcp's part of the handler chain, outermost first: a
// request meets these steps in this order, after k8s.io/apiserver's own
// (DefaultBuildHandlerChain: panic recovery, authentication, audit,
// authorization, API Priority and Fairness, timeouts...) and before the
// server's routes. The workarounds that refuse a request by its URL or
// guard its body's reading come first, then the guards, before anything
// decodes a body; the workarounds that rewrite an answer come last, so
// that they see the answer of the routes.
func (c *Config) handlerChain() []Filter {
	codecs := c.Codecs
	return []Filter{
		{"namespace-path", func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithNamespaceCheck(next, codecs)
		}},
		{"watch-timeout", func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithWatchTimeoutCheck(next, codecs)
		}},
		{"unreadable-body", func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithUnreadableBodyAsBadRequest(next)
		}},
		{"protobuf-body", func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithProtobufBodyRecovery(next, codecs)
		}},
		{"nesting-limit", func(next http.Handler, c *genericapiserver.Config) http.Handler {
			return guards.WithNestingLimit(next, codecs, nesting.Limit, c.MaxRequestBodyBytes)
		}},
		{"evaluation-budget", func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return guards.WithEvalBudget(next, codecs, guards.EvaluationBudget)
		}},
		{"patch-input-errors", func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithPatchInputErrors(next, codecs)
		}},
		{"resource-version", func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithResourceVersionCheck(next, codecs)
		}},
		{"version", func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return workarounds.WithVersion(next)
		}},
	}
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
