package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers/resourcequota"
)

// rqList is a ResourceList of counts, given as name, count pairs.
func rqList(kv ...any) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i].(string))] = *resource.NewQuantity(int64(kv[i+1].(int)), resource.DecimalSI)
	}
	return out
}

// rqWaitStatus polls quota ns/name until its status.hard is hard and its
// status.used is used, and returns how long that took.
func rqWaitStatus(t *testing.T, c kubernetes.Interface, ns, name string, hard, used corev1.ResourceList) time.Duration {
	t.Helper()
	start := time.Now()
	var last corev1.ResourceQuotaStatus
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		q, err := c.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		lastErr = err
		if err != nil {
			return false, nil
		}
		last = q.Status
		return quota.Equals(q.Status.Hard, hard) && quota.Equals(q.Status.Used, used), nil
	})
	if err != nil {
		t.Fatalf("quota %s/%s: waiting for hard %v used %v: %v (last status %v, last error %v)", ns, name, hard, used, err, last, lastErr)
	}
	return time.Since(start)
}

// TestResourceQuotaController follows a quota through its life: status
// appears on creation, counts typed objects under their legacy and
// count/ names and custom resources of a definition made after the
// controller started, rises on creation and drops on deletion.
func TestResourceQuotaController(t *testing.T) {
	s := startGeneric(t)
	runControllers(t, s, resourcequota.DescriptorWithOptions(resourcequota.Options{DiscoveryPeriod: time.Second}))
	ctx := context.Background()
	widgets := nsCreateCRD(t, s, "widgets", "Widget")
	const ns = "quota"
	createNamespace(t, s.Client, ns)

	hard := rqList("configmaps", 10, "count/secrets", 5, "count/widgets.nsctl.example.com", 3)
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if _, err := s.Client.CoreV1().ResourceQuotas(ns).Create(ctx, rq, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := rqWaitStatus(t, s.Client, ns, "q", hard,
		rqList("configmaps", 0, "count/secrets", 0, "count/widgets.nsctl.example.com", 0))
	t.Logf("status of a new quota after %v", took)

	for _, name := range []string{"one", "two"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := s.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nsCreateCustom(t, dynamic.NewForConfigOrDie(s.AdminConfig), widgets, "Widget", ns, "w")
	took = rqWaitStatus(t, s.Client, ns, "q", hard,
		rqList("configmaps", 2, "count/secrets", 1, "count/widgets.nsctl.example.com", 1))
	t.Logf("usage up after %v", took)

	if err := s.Client.CoreV1().ConfigMaps(ns).Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	took = rqWaitStatus(t, s.Client, ns, "q", hard,
		rqList("configmaps", 1, "count/secrets", 1, "count/widgets.nsctl.example.com", 1))
	t.Logf("usage down after %v", took)

	// A new hard limit is taken over, and counted, at once.
	hard = rqList("configmaps", 10, "count/configmaps", 10, "count/secrets", 5, "count/widgets.nsctl.example.com", 3)
	got, err := s.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Hard = hard
	if _, err := s.Client.CoreV1().ResourceQuotas(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	took = rqWaitStatus(t, s.Client, ns, "q", hard,
		rqList("configmaps", 1, "count/configmaps", 1, "count/secrets", 1, "count/widgets.nsctl.example.com", 1))
	t.Logf("new hard limits after %v", took)
}
