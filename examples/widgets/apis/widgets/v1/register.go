package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the name of the API group.
const GroupName = "widgets.example.dev"

// SchemeGroupVersion is the group and version of the types in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// Resource returns the group-qualified resource for an unqualified one.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}
