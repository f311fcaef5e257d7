package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers/namespace"
)

// BenchmarkNamespaceDeletion measures deleting a namespace that holds
// 1,000 configmaps and 1,000 custom resources, against the same server in
// the same run. "by-hand" is the baseline: the client deletes both
// collections itself and waits until they are empty.
// "namespace-controller" is `kubectl delete ns` until the namespace is
// gone; it includes the controller's 5 s grace period (upstream's too)
// before it starts, so that every API server has seen the deletion.
//
//	go test ./test/integration -run '^$' -bench NamespaceDeletion -benchtime 3x
func BenchmarkNamespaceDeletion(b *testing.B) {
	s := startGeneric(b)
	runControllers(b, s, namespace.Descriptor())
	widgets := nsCreateCRD(b, s, "widgets", "Widget")
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	ctx := context.Background()
	const perKind = 1000

	b.Run("by-hand", func(b *testing.B) {
		for i := range b.N {
			ns := fmt.Sprintf("hand-%d", i)
			b.StopTimer()
			createNamespace(b, s.Client, ns)
			fillNamespace(b, s.Client, dyn, widgets, ns, perKind)
			b.StartTimer()
			for _, r := range []dynamic.ResourceInterface{dyn.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns), dyn.Resource(widgets).Namespace(ns)} {
				if err := r.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
					b.Fatal(err)
				}
				nsEventually(b, time.Minute, "collection empty", func() (bool, error) {
					l, err := r.List(ctx, metav1.ListOptions{Limit: 1})
					return err == nil && len(l.Items) == 0, err
				})
			}
		}
	})
	b.Run("namespace-controller", func(b *testing.B) {
		for i := range b.N {
			ns := fmt.Sprintf("ctl-%d", i)
			b.StopTimer()
			createNamespace(b, s.Client, ns)
			fillNamespace(b, s.Client, dyn, widgets, ns, perKind)
			b.StartTimer()
			nsDeleteAndWaitGone(b, s.Client, ns, 2*time.Minute)
		}
	})
}

// fillNamespace creates n configmaps and n custom resources of gvr in ns,
// with a few clients at once.
func fillNamespace(b testing.TB, c kubernetes.Interface, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string, n int) {
	b.Helper()
	ctx := context.Background()
	const workers = 8
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				name := fmt.Sprintf("o-%04d", i)
				if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
				cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "Widget", "metadata": map[string]any{"name": name}}}
				if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, cr, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
