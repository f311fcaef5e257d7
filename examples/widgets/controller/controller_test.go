package controller

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/events"

	v1 "example.dev/widgets/apis/widgets/v1"
)

// TestSync: a widget at a generation its status has not observed gets
// observedGeneration, phase Ready and condition Ready through the status
// subresource, and an event; a widget already observed is left alone.
func TestSync(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	toUnstructured := func(w *v1.Widget) *unstructured.Unstructured {
		w.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("Widget"))
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: content}
	}
	stale := &v1.Widget{
		ObjectMeta: metav1.ObjectMeta{Name: "stale", Namespace: "default", Generation: 2},
		Spec:       v1.WidgetSpec{Size: 3, Color: v1.ColorRed},
		Status:     v1.WidgetStatus{ObservedGeneration: 1},
	}
	current := &v1.Widget{
		ObjectMeta: metav1.ObjectMeta{Name: "current", Namespace: "default", Generation: 1},
		Spec:       v1.WidgetSpec{Size: 3, Color: v1.ColorRed},
		Status:     v1.WidgetStatus{ObservedGeneration: 1, Phase: "Custom"},
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgets: "WidgetList"}, toUnstructured(stale), toUnstructured(current))
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	recorder := events.NewFakeRecorder(10)
	c, err := New(factory.ForResource(widgets), client.Resource(widgets), recorder)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	client.ClearActions()

	for _, key := range []string{"default/stale", "default/current", "default/missing"} {
		if err := c.sync(ctx, key); err != nil {
			t.Fatalf("sync %s: %v", key, err)
		}
	}

	actions := client.Actions()
	if len(actions) != 1 || actions[0].GetVerb() != "update" || actions[0].GetSubresource() != "status" {
		t.Fatalf("actions %v, want one update of widgets/status", actions)
	}
	got, err := client.Resource(widgets).Namespace("default").Get(ctx, "stale", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var w v1.Widget
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.UnstructuredContent(), &w); err != nil {
		t.Fatal(err)
	}
	if w.Status.ObservedGeneration != 2 || w.Status.Phase != v1.PhaseReady {
		t.Errorf("status %+v, want observedGeneration 2, phase Ready", w.Status)
	}
	ready := meta.FindStatusCondition(w.Status.Conditions, v1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason != ReasonReconciled || ready.ObservedGeneration != 2 {
		t.Errorf("Ready condition %+v, want True, Reconciled, observedGeneration 2", ready)
	}
	select {
	case e := <-recorder.Events:
		if e != "Normal Reconciled Observed generation 2" {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event recorded")
	}
}
