package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// BenchmarkConfigMapCreateAdmission measures the cost of admission on the
// write path: configmap creates, in parallel, into a namespace no webhook
// or policy matches, into one where a validating webhook on loopback
// HTTPS is called for each create, and into one where a
// ValidatingAdmissionPolicy with one CEL validation runs. Same server, same
// run, so the ratios are what to read:
//
//	go test ./test/integration -run '^$' -bench ConfigMapCreateAdmission -benchtime 3000x
func BenchmarkConfigMapCreateAdmission(b *testing.B) {
	s := startGeneric(b)
	ctx := context.Background()
	wh := whStart(b)
	for _, ns := range []string{"bench-none", "bench-webhook", "bench-policy"} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"bench": ns}}}
		if _, err := s.Client.CoreV1().Namespaces().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	api := s.Client.AdmissionregistrationV1()
	hook := whValidating("bench.example.com", wh.clientConfig("/deny-labelled"), "", admissionregistrationv1.Fail)
	hook.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"bench": "bench-webhook"}}
	if _, err := api.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{hook},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: polRules("", "configmaps"),
			Validations:      []admissionregistrationv1.Validation{{Expression: `!has(object.data) || !('forbidden' in object.data)`}},
		},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "bench",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": "bench-policy"}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(s.AdminConfig)
	cfg.QPS, cfg.Burst = -1, -1
	client := kubernetes.NewForConfigOrDie(cfg)
	// Wait until both are in effect: a forbidden object is refused.
	for _, ns := range []string{"bench-webhook", "bench-policy"} {
		for i := 0; ; i++ {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", i), Labels: map[string]string{"deny": "true"}}, Data: map[string]string{"forbidden": "x"}}
			if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
				break
			}
		}
	}

	var seq atomic.Int64
	for _, ns := range []string{"bench-none", "bench-webhook", "bench-policy"} {
		b.Run(ns[len("bench-"):], func(b *testing.B) {
			calls := wh.calls.Load()
			cms := client.CoreV1().ConfigMaps(ns)
			// Enough concurrent writers that the server's CPU, not one
			// client's round trips and etcd's fsync, bounds throughput.
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", seq.Add(1))}, Data: map[string]string{"k": "v"}}
					if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			b.ReportMetric(float64(wh.calls.Load()-calls)/float64(b.N), "webhook-calls/op")
		})
	}
}
