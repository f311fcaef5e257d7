package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	resourcequotaadmission "k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/client-go/dynamic"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/resourcequota"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// TestQuotaAdmission: with the ResourceQuota admission plugin, a quota is
// a limit, not only a report. Creates past the hard count are refused with
// 403 and upstream's message, for typed objects under their legacy name and
// for custom resources under count/<resource>.<group>, and nothing is
// stored; deleting an object makes room again.
func TestQuotaAdmission(t *testing.T) {
	s := startGeneric(t)
	// The definition first, so that the controller's monitors cover it from
	// its start. A resource discovered later makes the controller recount
	// every quota, and a recount from informers that have not yet seen the
	// last create can write a usage below the one admission has just
	// charged (upstream's controller can too): the third create below was
	// then let through under load.
	widgets := nsCreateCRD(t, s, "gadgets", "Gadget")
	runControllers(t, s, resourcequota.DescriptorWithOptions(resourcequota.Options{DiscoveryPeriod: time.Second}))
	ctx := context.Background()
	const ns = "quota-admission"
	createNamespace(t, s.Client, ns)

	hard := rqList("configmaps", 2, "count/gadgets.nsctl.example.com", 1)
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if _, err := s.Client.CoreV1().ResourceQuotas(ns).Create(ctx, rq, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rqWaitStatus(t, s.Client, ns, "q", hard, rqList("configmaps", 0, "count/gadgets.nsctl.example.com", 0))

	cms := s.Client.CoreV1().ConfigMaps(ns)
	for _, name := range []string{"one", "two"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s within quota: %v", name, err)
		}
	}
	_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "three"}}, metav1.CreateOptions{})
	const want = `exceeded quota: q, requested: configmaps=1, used: configmaps=2, limited: configmaps=2`
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("third configmap: got %v, want 403 with %q", err, want)
	}
	if _, err := cms.Get(ctx, "three", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("refused configmap was stored: %v", err)
	}

	// Deleting one makes room once the controller has recounted.
	if err := cms.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rqWaitStatus(t, s.Client, ns, "q", hard, rqList("configmaps", 1, "count/gadgets.nsctl.example.com", 0))
	// Admission reads quotas from its informer, which may still hold the
	// usage it charged itself for a moment after the recount is stored: a
	// 403 for the quota is "not yet", as for any client.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "three"}}, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota: q") {
			return false, nil
		}
		return true, err
	})
	if err != nil {
		t.Fatalf("create after delete: %v", err)
	}

	dyn := dynamic.NewForConfigOrDie(s.AdminConfig).Resource(widgets).Namespace(ns)
	gadget := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(widgets.GroupVersion().String())
		u.SetKind("Gadget")
		u.SetName(name)
		return u
	}
	if _, err := dyn.Create(ctx, gadget("a"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("first gadget: %v", err)
	}
	_, err = dyn.Create(ctx, gadget("b"), metav1.CreateOptions{})
	const wantCR = `exceeded quota: q, requested: count/gadgets.nsctl.example.com=1, used: count/gadgets.nsctl.example.com=1, limited: count/gadgets.nsctl.example.com=1`
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), wantCR) {
		t.Fatalf("second gadget: got %v, want 403 with %q", err, wantCR)
	}
}

// TestQuotaAdmissionDisabled: --disable-admission-plugins=ResourceQuota
// takes the plugin out of the chain: a full quota limits nothing.
func TestQuotaAdmissionDisabled(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{
		Stack: layering.Generic(),
		APIServer: func(o *options.Options) {
			o.Admission.DisablePlugins = []string{resourcequotaadmission.PluginName}
		},
	})
	ctx := context.Background()
	const ns = "quota-off"
	createNamespace(t, s.Client, ns)
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: rqList("configmaps", 0)}}
	created, err := s.Client.CoreV1().ResourceQuotas(ns).Create(ctx, rq, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No controller runs here: write the status it would, a full quota.
	created.Status = corev1.ResourceQuotaStatus{Hard: rqList("configmaps", 0), Used: rqList("configmaps", 0)}
	if _, err := s.Client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "free"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create with the quota plugin disabled: %v", err)
	}
}
