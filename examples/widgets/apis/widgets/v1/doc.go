// Package v1 is version v1 of the widgets.example.dev API group: Widgets,
// an example of a native API group that a consumer of gcp adds to the
// server, stored in etcd as JSON.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.example.widgets.v1
// +groupName=widgets.example.dev
package v1
