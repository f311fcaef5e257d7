package namespace

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// apiServicesResource is the APIService resource of kube-aggregator, read
// through a dynamic informer so the controller needs no aggregator client.
var apiServicesResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// apiServiceExplainer says why a group version cannot be discovered, from
// its APIService's Available condition.
type apiServiceExplainer struct {
	store cache.Store
}

// explain returns "APIService <version>.<group> is not Available:
// <reason>: <message>", or "" when there is no such APIService or it is
// Available.
func (e apiServiceExplainer) explain(gv schema.GroupVersion) string {
	if e.store == nil {
		return ""
	}
	name := gv.Version + "." + gv.Group
	obj, exists, err := e.store.GetByKey(name)
	if err != nil || !exists {
		return ""
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return ""
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Available" {
			continue
		}
		if m["status"] == "True" {
			return ""
		}
		return fmt.Sprintf("APIService %s is not Available: %v: %v", name, m["reason"], m["message"])
	}
	return fmt.Sprintf("APIService %s has no Available condition yet", name)
}
