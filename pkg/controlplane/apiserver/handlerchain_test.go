package apiserver

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// TestHandlerChainOrder: gcp's filters, outermost first, are the
// workarounds on the URL and the body's reading, the guards before
// anything decodes a body, then the workarounds that rewrite the routes'
// answers, then the layers'; a change of order is a deliberate diff here.
func TestHandlerChainOrder(t *testing.T) {
	t.Parallel()
	c := &Config{Codecs: serializer.NewCodecFactory(runtime.NewScheme())}
	c.Composition.Filters = []Filter{{Name: "layer-a"}, {Name: "layer-b"}}
	var names []string
	for _, f := range c.handlerChain() {
		names = append(names, f.Name)
	}
	want := []string{"namespace-path", "watch-timeout", "unreadable-body", "protobuf-body", "nesting-limit", "evaluation-budget", "patch-input-errors", "resource-version", "version", "layer-a", "layer-b"}
	if !slices.Equal(names, want) {
		t.Errorf("handler chain %q, want %q", names, want)
	}
}

// TestBuildHandlerChain: a request meets Filters in their order, the first
// outermost, and a filter added after NewConfig is in the chain.
func TestBuildHandlerChain(t *testing.T) {
	t.Parallel()
	var met []string
	step := func(name string) Filter {
		return Filter{Name: name, Wrap: func(next http.Handler, _ *genericapiserver.Config) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				met = append(met, name)
				next.ServeHTTP(w, r)
			})
		}}
	}
	c := &Config{Filters: []Filter{step("a"), step("b")}}
	c.Filters = append(c.Filters, step("added"))
	routes := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { met = append(met, "routes") })
	wrapFilters(routes, nil, c.Filters).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if want := []string{"a", "b", "added", "routes"}; !slices.Equal(met, want) {
		t.Errorf("met %q, want %q", met, want)
	}
}
