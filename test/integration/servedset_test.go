package integration

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/kubernetes"

	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// servedResources lists resource[.group] for every resource and
// subresource discovery reports, sorted.
func servedResources(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	_, lists, err := client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	seen := map[string]bool{}
	for _, list := range lists {
		group := strings.Split(list.GroupVersion, "/")[0]
		if !strings.Contains(list.GroupVersion, "/") {
			group = ""
		}
		for _, r := range list.APIResources {
			name := r.Name
			if group != "" {
				name += "." + group
			}
			seen[name] = true
		}
	}
	var out []string
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// TestServedResources pins the exact set of served resources: adding or
// removing an API must change this list.
func TestServedResources(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	// The 30 group/resources upstream's generic control plane
	// (k8s.io/kubernetes pkg/controlplane/apiserver/samples/generic,
	// Kubernetes 1.37) serves with default flags, and their subresources.
	want := []string{
		"apiservices.apiregistration.k8s.io",
		"apiservices/status.apiregistration.k8s.io",
		"certificatesigningrequests.certificates.k8s.io",
		"certificatesigningrequests/approval.certificates.k8s.io",
		"certificatesigningrequests/status.certificates.k8s.io",
		"clusterrolebindings.rbac.authorization.k8s.io",
		"clusterroles.rbac.authorization.k8s.io",
		"clustertrustbundles.certificates.k8s.io",
		"configmaps",
		"customresourcedefinitions.apiextensions.k8s.io",
		"customresourcedefinitions/status.apiextensions.k8s.io",
		"events",
		"events.events.k8s.io",
		"flowschemas.flowcontrol.apiserver.k8s.io",
		"flowschemas/status.flowcontrol.apiserver.k8s.io",
		"leases.coordination.k8s.io",
		"localsubjectaccessreviews.authorization.k8s.io",
		"mutatingadmissionpolicies.admissionregistration.k8s.io",
		"mutatingadmissionpolicybindings.admissionregistration.k8s.io",
		"mutatingwebhookconfigurations.admissionregistration.k8s.io",
		"namespaces",
		"namespaces/finalize",
		"namespaces/status",
		"prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
		"prioritylevelconfigurations/status.flowcontrol.apiserver.k8s.io",
		"resourcequotas",
		"resourcequotas/status",
		"rolebindings.rbac.authorization.k8s.io",
		"roles.rbac.authorization.k8s.io",
		"secrets",
		"selfsubjectaccessreviews.authorization.k8s.io",
		"selfsubjectreviews.authentication.k8s.io",
		"selfsubjectrulesreviews.authorization.k8s.io",
		"serviceaccounts",
		"serviceaccounts/token",
		"subjectaccessreviews.authorization.k8s.io",
		"tokenreviews.authentication.k8s.io",
		"validatingadmissionpolicies.admissionregistration.k8s.io",
		"validatingadmissionpolicies/status.admissionregistration.k8s.io",
		"validatingadmissionpolicybindings.admissionregistration.k8s.io",
		"validatingwebhookconfigurations.admissionregistration.k8s.io",
	}
	if n := len(slices.DeleteFunc(slices.Clone(want), func(r string) bool { return strings.Contains(r, "/") })); n != 30 {
		t.Fatalf("the list holds %d resources, upstream serves 30", n)
	}
	if got := servedResources(t, s.Client); !slices.Equal(got, want) {
		t.Fatalf("served resources:\n got %q\nwant %q", got, want)
	}
}

// TestWithoutCoordinationLayer shows a layer removed in code: leases are not
// served, everything else is.
func TestWithoutCoordinationLayer(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Stack: layering.Generic().Without(layering.Coordination)})
	got := servedResources(t, s.Client)
	if slices.Contains(got, "leases.coordination.k8s.io") {
		t.Fatalf("leases served without the coordination layer: %q", got)
	}
	for _, r := range []string{"configmaps", "namespaces", "customresourcedefinitions.apiextensions.k8s.io", "events.events.k8s.io"} {
		if !slices.Contains(got, r) {
			t.Errorf("%s not served without the coordination layer: %q", r, got)
		}
	}
}

// TestSubresourceVerbs: status and finalize only read and update the
// namespace; they cannot create or delete through the subresource.
func TestSubresourceVerbs(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	list, err := s.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	verbs := map[string][]string{}
	for _, r := range list.APIResources {
		v := append([]string(nil), r.Verbs...)
		sort.Strings(v)
		verbs[r.Name] = v
	}
	for _, sub := range []string{"namespaces/status", "namespaces/finalize"} {
		want := []string{"get", "patch", "update"}
		if sub == "namespaces/finalize" {
			want = []string{"update"}
		}
		if !slices.Equal(verbs[sub], want) {
			t.Errorf("%s verbs %v, want %v", sub, verbs[sub], want)
		}
	}
	want := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	if !slices.Equal(verbs["configmaps"], want) {
		t.Errorf("configmaps verbs %v, want %v", verbs["configmaps"], want)
	}
}

// TestWithoutAdmissionRegistrationLayer: without the layer, its admission
// plugins are not in the chain, so writes do not wait for webhook and
// policy configurations that are never served.
func TestWithoutAdmissionRegistrationLayer(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Stack: layering.Generic().Without(layering.AdmissionRegistration)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create without the admissionregistration layer: %v", err)
	}
	if got := servedResources(t, s.Client); slices.Contains(got, "validatingwebhookconfigurations.admissionregistration.k8s.io") {
		t.Fatalf("webhook configurations served without the layer")
	}
}

// TestWithoutFlowControlLayer: without the layer, API Priority and
// Fairness is off (the max-in-flight limits apply) and the server serves.
func TestWithoutFlowControlLayer(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Stack: layering.Generic().Without(layering.FlowControl)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create without the flowcontrol layer: %v", err)
	}
	if got := servedResources(t, s.Client); slices.Contains(got, "flowschemas.flowcontrol.apiserver.k8s.io") {
		t.Fatalf("flowschemas served without the layer")
	}
}
