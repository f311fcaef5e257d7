package informertest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
)

// TestStart: once Start returns, the informers' listers hold the fake
// clientset's objects; when the test ends, the queue is shut down.
func TestStart(t *testing.T) {
	queue := workqueue.NewTyped[string]()
	t.Run("synced", func(t *testing.T) {
		client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
		factory := informers.NewSharedInformerFactory(client, 0)
		lister := factory.Core().V1().Namespaces().Lister()
		Start(t, factory, queue)
		if got, err := lister.List(labels.Everything()); err != nil || len(got) != 1 {
			t.Fatalf("the lister after Start: %v %v, want the one namespace", got, err)
		}
	})
	if !queue.ShuttingDown() {
		t.Fatal("the queue still runs after its test ended")
	}
}
