package coldcrs

import (
	"net/http/httptest"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"
)

func established(scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: scope,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gadget", Plural: "gadgets"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}, {Name: "v0", Served: false}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
		}},
	}
}

// Only what the empty storage answers exactly as the CRD's would is
// answerable; the rest goes to apiextensions-apiserver.
func TestAnswerable(t *testing.T) {
	terminating := established(apiextensionsv1.NamespaceScoped)
	now := metav1.Now()
	terminating.DeletionTimestamp = &now
	notEstablished := established(apiextensionsv1.NamespaceScoped)
	notEstablished.Status.Conditions = nil
	for _, c := range []struct {
		name      string
		crd       *apiextensionsv1.CustomResourceDefinition
		verb, ns  string
		version   string
		query     string
		accept    string
		answering bool
	}{
		{"a list", established(apiextensionsv1.NamespaceScoped), "list", "", "v1", "", "", true},
		{"a list in a namespace", established(apiextensionsv1.NamespaceScoped), "list", "ns", "v1", "?limit=3&labelSelector=a", "application/json", true},
		{"a watch from a resourceVersion", established(apiextensionsv1.NamespaceScoped), "watch", "", "v1", "?resourceVersion=5&allowWatchBookmarks=true", "", true},
		{"a streaming list", established(apiextensionsv1.NamespaceScoped), "watch", "", "v1", "?sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", "", true},
		{"a list at a resourceVersion", established(apiextensionsv1.NamespaceScoped), "list", "", "v1", "?resourceVersion=5", "", false},
		{"a watch from no number", established(apiextensionsv1.NamespaceScoped), "watch", "", "v1", "?resourceVersion=x&allowWatchBookmarks=true", "", false},
		{"an exact match", established(apiextensionsv1.NamespaceScoped), "list", "", "v1", "?resourceVersion=0&resourceVersionMatch=Exact", "", false},
		{"a field selector", established(apiextensionsv1.NamespaceScoped), "list", "", "v1", "?fieldSelector=metadata.name%3Dx", "", false},
		{"a continue token", established(apiextensionsv1.NamespaceScoped), "list", "", "v1", "?continue=abc", "", false},
		{"a table", established(apiextensionsv1.NamespaceScoped), "list", "", "v1", "", "application/json;as=Table;v=v1;g=meta.k8s.io", false},
		{"a version not served", established(apiextensionsv1.NamespaceScoped), "list", "", "v0", "", "", false},
		{"a cluster-scoped kind in a namespace", established(apiextensionsv1.ClusterScoped), "list", "ns", "v1", "", "", false},
		{"a CRD being deleted", terminating, "list", "", "v1", "", "", false},
		{"a CRD not established", notEstablished, "watch", "", "v1", "?allowWatchBookmarks=true", "", false},
	} {
		r := httptest.NewRequest("GET", "/apis/example.com/"+c.version+"/gadgets"+c.query, nil)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		info := &request.RequestInfo{IsResourceRequest: true, Verb: c.verb, Namespace: c.ns, APIGroup: "example.com", APIVersion: c.version, Resource: "gadgets"}
		if got := answerable(c.crd, info, r); got != c.answering {
			t.Errorf("%s: answerable %v, want %v", c.name, got, c.answering)
		}
	}
}

// The warnings are apiextensions-apiserver's.
func TestDeprecationWarnings(t *testing.T) {
	crd := established(apiextensionsv1.NamespaceScoped)
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{
		{Name: "v1alpha1", Served: true, Deprecated: true},
		{Name: "v1beta1", Served: true},
		{Name: "v1", Served: true},
		{Name: "v2", Served: false},
	}
	if got, want := deprecationWarnings(crd, &crd.Spec.Versions[0]), []string{"example.com/v1alpha1 Gadget is deprecated; use example.com/v1 Gadget"}; !slices.Equal(got, want) {
		t.Errorf("default warning %q, want %q", got, want)
	}
	own := "use v1"
	crd.Spec.Versions[0].DeprecationWarning = &own
	if got := deprecationWarnings(crd, &crd.Spec.Versions[0]); !slices.Equal(got, []string{own}) {
		t.Errorf("the CRD's own warning: %q", got)
	}
	if got := deprecationWarnings(crd, &crd.Spec.Versions[2]); got != nil {
		t.Errorf("a version not deprecated warns %q", got)
	}
	crd.Spec.Versions = crd.Spec.Versions[:1]
	crd.Spec.Versions[0].DeprecationWarning = nil
	if got, want := deprecationWarnings(crd, &crd.Spec.Versions[0]), []string{"example.com/v1alpha1 Gadget is deprecated"}; !slices.Equal(got, want) {
		t.Errorf("with no newer version %q, want %q", got, want)
	}
}
