package namespace

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
)

func TestDescriptor(t *testing.T) {
	d := Descriptor()
	if d.Name != Name || !slices.Equal(d.Aliases, []string{"namespace"}) || d.DisabledByDefault || d.New == nil {
		t.Errorf("descriptor: %+v", d)
	}
}

// TestController runs the controller over fakes: a deleted namespace is
// emptied and finalized, an active one is left alone, and one deleted
// later is picked up from its update event.
func TestController(t *testing.T) {
	f := newFakeCluster(t, []runtime.Object{deletingNamespace("doomed"), activeNamespace("live")},
		object(configmaps, "ConfigMap", "doomed", "c1"),
		object(widgets, "Widget", "doomed", "w1"),
		object(configmaps, "ConfigMap", "live", "c1"),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactory(f.core, 0)
	c := newController(ctx, options{
		namespaces: f.core.CoreV1().Namespaces(),
		metadata:   f.metadata,
		discover:   f.discover,
		informer:   factory.Core().V1().Namespaces(),
		workers:    2,
	})
	if c.Name() != Name {
		t.Errorf("name %q", c.Name())
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; factory.Shutdown() }()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	waitFor("doomed finalized", func() bool { return f.namespace(t, "doomed") == nil })
	if n := len(f.items(configmaps, "doomed")) + len(f.items(widgets, "doomed")); n != 0 {
		t.Errorf("%d objects left in doomed", n)
	}
	if live := f.namespace(t, "live"); live == nil || len(live.Status.Conditions) != 0 || len(f.items(configmaps, "live")) != 1 {
		t.Fatalf("live namespace touched: %+v", live)
	}

	// Deleting "live" now (an update event) empties it too.
	live := f.namespace(t, "live").DeepCopy()
	now := metav1.Now()
	live.DeletionTimestamp = &now
	live.Status.Phase = corev1.NamespaceTerminating
	if _, err := f.core.CoreV1().Namespaces().Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("live finalized", func() bool { return f.namespace(t, "live") == nil })
	if n := len(f.items(configmaps, "live")); n != 0 {
		t.Errorf("%d configmaps left in live", n)
	}
}

// TestControllerRequeuesRemainingContent: content held by finalizers
// brings the namespace back after about half the estimate, not at once.
func TestControllerRequeuesRemainingContent(t *testing.T) {
	f := newFakeCluster(t, []runtime.Object{deletingNamespace("held")},
		object(configmaps, "ConfigMap", "held", "c1", "example.com/wait"))
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(f.core, 0)
	c := newController(ctx, options{
		namespaces: f.core.CoreV1().Namespaces(),
		metadata:   f.metadata,
		discover:   f.discover,
		informer:   factory.Core().V1().Namespaces(),
		workers:    1,
		// Informer events (the add, the status updates) wait out the
		// grace period; the test sees only the controller's own requeues.
		gracePeriod: time.Hour,
	})
	defer c.queue.ShutDown()
	factory.Start(ctx.Done())
	// Informers stop only when their stop channel closes.
	defer func() { cancel(); factory.Shutdown() }()
	factory.WaitForCacheSync(ctx.Done())

	c.queue.Add("held")
	if !c.processNext(ctx) {
		t.Fatal("queue shut down")
	}
	// Queued again only after (15/2+1)s; and not rate limited.
	if n := c.queue.Len(); n != 0 {
		t.Errorf("namespace requeued at once (queue length %d)", n)
	}
	if n := c.queue.NumRequeues("held"); n != 0 {
		t.Errorf("remaining content counted as a failure: %d requeues", n)
	}

	// A failure is retried with backoff.
	f.discoveryErr = context.DeadlineExceeded
	c.queue.Add("held")
	c.processNext(ctx)
	if n := c.queue.NumRequeues("held"); n != 1 {
		t.Errorf("failure: %d rate-limited requeues, want 1", n)
	}
}
