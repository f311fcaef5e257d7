package typed

import (
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// ShortNamed is a store that also reports short names for discovery
// (`kubectl get cm`).
type ShortNamed struct {
	*genericregistry.Store
	shortNames []string
}

var _ rest.ShortNamesProvider = &ShortNamed{}

// WithShortNames wraps store so discovery lists names as its short names.
func WithShortNames(store *genericregistry.Store, names ...string) *ShortNamed {
	return &ShortNamed{Store: store, shortNames: names}
}

// ShortNames implements rest.ShortNamesProvider.
func (s *ShortNamed) ShortNames() []string { return s.shortNames }
