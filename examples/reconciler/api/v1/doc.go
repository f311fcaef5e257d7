// Package v1 is version v1 of the greetings.example.dev API group:
// Greetings, a custom resource (config/crd) that the example's reconciler
// answers with a status message and a ConfigMap.
//
// +k8s:deepcopy-gen=package
// +groupName=greetings.example.dev
package v1
