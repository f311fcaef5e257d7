package openapi

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	apiopenapi "k8s.io/apiserver/pkg/endpoints/openapi"
)

// NewDefinitionNamer returns the definition namer to pass, with
// GetOpenAPIDefinitions, to DefaultOpenAPIConfig and DefaultOpenAPIV3Config.
// It is k8s.io/apiserver's namer built from the schemes' external versions
// only. gcp registers each served versioned type under its group's
// __internal version as well (docs/architecture.md, decision 2); the upstream
// namer would list those registrations in the definitions'
// x-kubernetes-group-version-kind extension, publishing "__internal"
// versions to clients in /openapi/v2 and /openapi/v3.
func NewDefinitionNamer(schemes ...*runtime.Scheme) *apiopenapi.DefinitionNamer {
	external := make([]*runtime.Scheme, 0, len(schemes))
	for _, s := range schemes {
		e := runtime.NewScheme()
		for gvk, t := range s.AllKnownTypes() {
			if gvk.Version == runtime.APIVersionInternal {
				continue
			}
			// A scheme only holds pointers to structs that implement runtime.Object.
			e.AddKnownTypeWithName(gvk, reflect.New(t).Interface().(runtime.Object))
		}
		external = append(external, e)
	}
	return apiopenapi.NewDefinitionNamer(external...)
}
