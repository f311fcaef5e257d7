package namespace

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clienttesting "k8s.io/client-go/testing"
)

func TestDeleteLeavesActiveNamespaceAlone(t *testing.T) {
	f := newFakeCluster(t, []runtime.Object{activeNamespace("live")}, object(configmaps, "ConfigMap", "live", "c1"))
	if err := f.deleter().delete(context.Background(), "live"); err != nil {
		t.Fatal(err)
	}
	if got := f.metadataActions(); len(got) != 0 {
		t.Errorf("metadata actions on an active namespace: %v", got)
	}
	for _, a := range f.core.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("namespace action on an active namespace: %v", a)
		}
	}
	if ns := f.namespace(t, "live"); ns == nil || ns.Status.Phase != corev1.NamespaceActive || len(ns.Status.Conditions) != 0 {
		t.Errorf("namespace changed: %+v", ns)
	}
}

func TestDeleteMissingNamespace(t *testing.T) {
	f := newFakeCluster(t, nil)
	if err := f.deleter().delete(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
}

func TestDeleteEmptiesAndFinalizes(t *testing.T) {
	ns := deletingNamespace("doomed")
	f := newFakeCluster(t, []runtime.Object{ns, activeNamespace("other")},
		object(configmaps, "ConfigMap", "doomed", "c1"),
		object(configmaps, "ConfigMap", "doomed", "c2"),
		object(configmaps, "ConfigMap", "other", "c1"),
		object(widgets, "Widget", "doomed", "w1"),
		object(widgets, "Widget", "doomed", "w2"),
	)
	var statuses []*corev1.Namespace
	f.core.PrependReactor("update", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			statuses = append(statuses, a.(clienttesting.UpdateAction).GetObject().(*corev1.Namespace).DeepCopy())
		}
		return false, nil, nil
	})

	if err := f.deleter().delete(context.Background(), "doomed"); err != nil {
		t.Fatal(err)
	}
	if got := f.namespace(t, "doomed"); got != nil {
		t.Fatalf("namespace not finalized: %+v", got)
	}
	if n := len(f.items(configmaps, "doomed")) + len(f.items(widgets, "doomed")); n != 0 {
		t.Errorf("%d objects left", n)
	}
	if n := len(f.items(configmaps, "other")); n != 1 {
		t.Errorf("other namespace has %d configmaps, want 1", n)
	}
	want := []string{
		"delete-collection configmaps", "list configmaps",
		"list widgets", "delete widgets/w1", "delete widgets/w2", "list widgets",
	}
	if got := f.metadataActions(); !slices.Equal(got, want) {
		t.Errorf("metadata actions\n got %v\nwant %v", got, want)
	}
	// Phase first, then the all-clear conditions.
	if len(statuses) != 2 || statuses[0].Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("status updates: %+v", statuses)
	}
	for _, typ := range conditionTypes {
		if got := condition(statuses[1], typ); !strings.HasPrefix(got, "False ") {
			t.Errorf("condition %s = %s", typ, got)
		}
	}
}

func TestDeleteWaitsForFinalizers(t *testing.T) {
	f := newFakeCluster(t, []runtime.Object{deletingNamespace("held")},
		object(configmaps, "ConfigMap", "held", "c1", "example.com/wait"),
		object(configmaps, "ConfigMap", "held", "c2", "example.com/wait", "example.com/other"),
		object(configmaps, "ConfigMap", "held", "c3"),
		object(widgets, "Widget", "held", "w1", "example.com/wait"),
	)
	d := f.deleter()
	err := d.delete(context.Background(), "held")
	var remaining *remainingError
	if !errors.As(err, &remaining) || remaining.estimate != finalizerWaitSeconds {
		t.Fatalf("want a remainingError of %ds, got %v", finalizerWaitSeconds, err)
	}
	ns := f.namespace(t, "held")
	if ns == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		t.Fatalf("namespace finalized while content remains: %+v", ns)
	}
	for typ, want := range map[corev1.NamespaceConditionType]string{
		corev1.NamespaceContentRemaining:         "True SomeResourcesRemain: Some resources are remaining: configmaps. has 2 resource instances, widgets.example.com has 1 resource instances",
		corev1.NamespaceFinalizersRemaining:      "True SomeFinalizersRemain: Some content in the namespace has finalizers remaining: example.com/other in 1 resource instances, example.com/wait in 3 resource instances",
		corev1.NamespaceDeletionContentFailure:   "False ContentDeleted: All content successfully deleted, may be waiting on finalization",
		corev1.NamespaceDeletionDiscoveryFailure: "False ResourcesDiscovered: All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "False ParsedGroupVersions: All legacy kube types successfully parsed",
	} {
		if got := condition(ns, typ); got != want {
			t.Errorf("condition %s\n got %s\nwant %s", typ, got, want)
		}
	}
	if len(ns.Status.Conditions) != len(conditionTypes) {
		t.Errorf("conditions: %+v", ns.Status.Conditions)
	}

	// A second pass changes nothing and does not delete the marked
	// objects again one by one.
	f.metadata.ClearActions()
	f.core.ClearActions()
	if err := d.delete(context.Background(), "held"); !errors.As(err, &remaining) {
		t.Fatalf("second pass: %v", err)
	}
	for _, a := range f.core.Actions() {
		if a.GetVerb() == "update" {
			t.Errorf("unchanged conditions written again: %v", a)
		}
	}
	if got, want := f.metadataActions(), []string{"delete-collection configmaps", "list configmaps", "list widgets", "list widgets"}; !slices.Equal(got, want) {
		t.Errorf("second pass metadata actions\n got %v\nwant %v", got, want)
	}

	// The finalizers go; the next pass finishes.
	for _, gvr := range []schema.GroupVersionResource{configmaps, widgets} {
		for _, item := range f.items(gvr, "held") {
			if err := f.metadata.Tracker().Delete(gvr, "held", item.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.delete(context.Background(), "held"); err != nil {
		t.Fatal(err)
	}
	if ns := f.namespace(t, "held"); ns != nil {
		t.Fatalf("namespace not finalized: %+v", ns)
	}
}

func TestDeleteReportsDiscoveryFailure(t *testing.T) {
	f := newFakeCluster(t, []runtime.Object{deletingNamespace("ns")}, object(configmaps, "ConfigMap", "ns", "c1"))
	f.resources = f.resources[:1]
	f.discoveryErr = &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.example.com", Version: "v1"}: errors.New("the server is currently unable to handle the request"),
	}}
	err := f.deleter().delete(context.Background(), "ns")
	if err == nil || !strings.Contains(err.Error(), "metrics.example.com/v1") {
		t.Fatalf("want the discovery error, got %v", err)
	}
	ns := f.namespace(t, "ns")
	if ns == nil {
		t.Fatal("namespace finalized although discovery failed")
	}
	want := "True DiscoveryFailed: Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.example.com/v1: the server is currently unable to handle the request"
	if got := condition(ns, corev1.NamespaceDeletionDiscoveryFailure); got != want {
		t.Errorf("discovery condition\n got %s\nwant %s", got, want)
	}
	// What was discovered is deleted nonetheless.
	if n := len(f.items(configmaps, "ns")); n != 0 {
		t.Errorf("%d configmaps left", n)
	}

	// Discovery recovers: the condition clears and the namespace goes.
	f.discoveryErr = nil
	if err := f.deleter().delete(context.Background(), "ns"); err != nil {
		t.Fatal(err)
	}
	if ns := f.namespace(t, "ns"); ns != nil {
		t.Fatalf("namespace not finalized: %+v", ns)
	}
}

func TestDeleteReportsGroupVersionParsingFailure(t *testing.T) {
	f := newFakeCluster(t, []runtime.Object{deletingNamespace("ns")})
	f.resources = append(f.resources, &metav1.APIResourceList{GroupVersion: "a/b/c", APIResources: []metav1.APIResource{{Name: "things", Namespaced: true, Verbs: []string{"delete"}}}})
	if err := f.deleter().delete(context.Background(), "ns"); err == nil {
		t.Fatal("want an error")
	}
	ns := f.namespace(t, "ns")
	if ns == nil {
		t.Fatal("namespace finalized")
	}
	if got, want := condition(ns, corev1.NamespaceDeletionGVParsingFailure), `True GroupVersionParsingFailed: unexpected GroupVersion string: a/b/c`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestDeleteReportsContentFailure(t *testing.T) {
	f := newFakeCluster(t, []runtime.Object{deletingNamespace("ns")},
		object(configmaps, "ConfigMap", "ns", "c1"),
		object(widgets, "Widget", "ns", "w1"),
	)
	f.metadata.PrependReactor("delete-collection", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is sad"))
	})
	err := f.deleter().delete(context.Background(), "ns")
	if err == nil || !strings.Contains(err.Error(), "etcd is sad") {
		t.Fatalf("want the deletion error, got %v", err)
	}
	ns := f.namespace(t, "ns")
	if ns == nil {
		t.Fatal("namespace finalized")
	}
	want := "True ContentDeletionFailed: Failed to delete all resource types, 1 remaining: Internal error occurred: etcd is sad"
	if got := condition(ns, corev1.NamespaceDeletionContentFailure); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	// The other resources are deleted nonetheless.
	if n := len(f.items(widgets, "ns")); n != 0 {
		t.Errorf("%d widgets left", n)
	}
}

func TestDeleteFallsBackWhenDeleteCollectionIsRefused(t *testing.T) {
	f := newFakeCluster(t, []runtime.Object{deletingNamespace("ns")},
		object(configmaps, "ConfigMap", "ns", "c1"),
	)
	f.metadata.PrependReactor("delete-collection", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewMethodNotSupported(configmaps.GroupResource(), "deletecollection")
	})
	if err := f.deleter().delete(context.Background(), "ns"); err != nil {
		t.Fatal(err)
	}
	want := []string{"delete-collection configmaps", "list configmaps", "delete configmaps/c1", "list configmaps", "list widgets", "list widgets"}
	if got := f.metadataActions(); !slices.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if ns := f.namespace(t, "ns"); ns != nil {
		t.Fatalf("namespace not finalized: %+v", ns)
	}
}

func TestDeleteReportsUnexpectedLeftovers(t *testing.T) {
	f := newFakeCluster(t, []runtime.Object{deletingNamespace("ns")}, object(configmaps, "ConfigMap", "ns", "c1"))
	// The deletion "succeeds" but nothing goes, as when objects are
	// created meanwhile.
	f.metadata.PrependReactor("delete-collection", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	err := f.deleter().delete(context.Background(), "ns")
	var remaining *remainingError
	if err == nil || errors.As(err, &remaining) || !strings.Contains(err.Error(), "unexpected items still remain") {
		t.Fatalf("want an unexpected-items error, got %v", err)
	}
	if got := condition(f.namespace(t, "ns"), corev1.NamespaceContentRemaining); got != "True SomeResourcesRemain: Some resources are remaining: configmaps. has 1 resource instances" {
		t.Errorf("content condition: %s", got)
	}
}

func TestDeleteRetriesStatusConflicts(t *testing.T) {
	f := newFakeCluster(t, []runtime.Object{deletingNamespace("ns")}, object(configmaps, "ConfigMap", "ns", "c1", "example.com/wait"))
	conflicts := 2
	f.core.PrependReactor("update", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(corev1.Resource("namespaces"), "ns", errors.New("stale"))
		}
		return false, nil, nil
	})
	var remaining *remainingError
	if err := f.deleter().delete(context.Background(), "ns"); !errors.As(err, &remaining) {
		t.Fatalf("want a remainingError, got %v", err)
	}
	ns := f.namespace(t, "ns")
	if ns.Status.Phase != corev1.NamespaceTerminating || !strings.HasPrefix(condition(ns, corev1.NamespaceFinalizersRemaining), "True ") {
		t.Errorf("status not written after conflicts: %+v", ns.Status)
	}
}

func TestConditionsApply(t *testing.T) {
	old := metav1.NewTime(metav1.Now().Add(-3600e9))
	status := corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
		{Type: "SomethingElse", Status: corev1.ConditionTrue, Reason: "Mine", LastTransitionTime: old},
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "Some resources are remaining: configmaps. has 5 resource instances", LastTransitionTime: old},
		{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionTrue, Reason: "ContentDeletionFailed", Message: "old failure", LastTransitionTime: old},
	}}
	c := &conditions{}
	c.contentRemaining(contentTotals{resources: map[schema.GroupVersionResource]int{configmaps: 2, widgets: 0}, finalizers: map[string]int{}})
	if !c.apply(&status) {
		t.Fatal("apply reported no change")
	}
	if len(status.Conditions) != 1+len(conditionTypes) {
		t.Fatalf("conditions: %+v", status.Conditions)
	}
	if status.Conditions[0].Type != "SomethingElse" || !status.Conditions[0].LastTransitionTime.Equal(&old) {
		t.Errorf("foreign condition changed: %+v", status.Conditions[0])
	}
	remaining := status.Conditions[1]
	if remaining.Message != "Some resources are remaining: configmaps. has 2 resource instances" || !remaining.LastTransitionTime.Equal(&old) {
		t.Errorf("a message change moved the transition time or was lost: %+v", remaining)
	}
	failure := status.Conditions[2]
	if failure.Status != corev1.ConditionFalse || failure.Reason != "ContentDeleted" || failure.LastTransitionTime.Equal(&old) {
		t.Errorf("a status change kept the transition time: %+v", failure)
	}
	if c.apply(&status) {
		t.Error("second apply reported a change")
	}
}
