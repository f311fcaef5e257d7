// Package layer is the widgets layer: everything widgets.example.dev
// brings to a gcp control plane, as one layering.Layer.
package layer

import (
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	gcpregistry "github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/layering"

	"example.dev/widgets/controller"
	"example.dev/widgets/openapi"
	"example.dev/widgets/registry"
)

// Name is the layer's name in a stack.
const Name = "widgets"

// Layer serves widgets.example.dev/v1 (stored as JSON, with its generated
// OpenAPI definitions) and runs the widget controller, whose descriptor
// brings its own service account and the RBAC it needs.
func Layer() layering.Layer {
	return layering.Layer{
		Name:               Name,
		APIGroups:          []gcpregistry.APIGroup{registry.APIGroup{}},
		OpenAPIDefinitions: openapi.GetOpenAPIDefinitions,
		Controllers:        []controllers.Descriptor{controller.Descriptor()},
	}
}
