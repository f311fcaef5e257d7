package namespace

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
)

// fakeCluster is a namespace client and a metadata client over in-memory
// trackers that behave like the API server where the controller relies on
// it: deleting an object with finalizers only marks it deleted,
// namespaces/finalize sets spec.finalizers and deletes a deleted namespace
// once they are empty.
type fakeCluster struct {
	core     *kubefake.Clientset
	metadata *metadatafake.FakeMetadataClient
	// resources is what discovery returns, with discoveryErr.
	resources    []*metav1.APIResourceList
	discoveryErr error
}

var (
	configmaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgets    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// standardResources: configmaps with every verb, widgets without
// deletecollection, tokenreviews that cannot be deleted.
func standardResources() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"create", "delete", "deletecollection", "get", "list", "watch"}},
		}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: []string{"create", "delete", "get", "list"}},
			{Name: "tokenreviews", Namespaced: true, Kind: "TokenReview", Verbs: []string{"create"}},
		}},
	}
}

func newFakeCluster(t *testing.T, namespaces []runtime.Object, content ...runtime.Object) *fakeCluster {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	f := &fakeCluster{
		core:      kubefake.NewClientset(namespaces...),
		metadata:  metadatafake.NewSimpleMetadataClient(scheme, content...),
		resources: standardResources(),
	}
	f.core.PrependReactor("create", "namespaces", f.finalizeReactor)
	f.metadata.PrependReactor("delete", "*", f.deleteReactor)
	f.metadata.PrependReactor("delete-collection", "*", f.deleteCollectionReactor)
	return f
}

func (f *fakeCluster) discover() ([]*metav1.APIResourceList, error) {
	return f.resources, f.discoveryErr
}

func (f *fakeCluster) deleter() *deleter {
	return newDeleter(f.core.CoreV1().Namespaces(), f.metadata, f.discover, corev1.FinalizerKubernetes)
}

func (f *fakeCluster) finalizeReactor(action clienttesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "finalize" {
		return false, nil, nil
	}
	in := action.(clienttesting.CreateAction).GetObject().(*corev1.Namespace)
	tracker := f.core.Tracker()
	obj, err := tracker.Get(corev1.SchemeGroupVersion.WithResource("namespaces"), "", in.Name)
	if err != nil {
		return true, nil, err
	}
	ns := obj.(*corev1.Namespace).DeepCopy()
	ns.Spec.Finalizers = in.Spec.Finalizers
	if len(ns.Spec.Finalizers) == 0 && len(ns.Finalizers) == 0 && !ns.DeletionTimestamp.IsZero() {
		return true, ns, tracker.Delete(corev1.SchemeGroupVersion.WithResource("namespaces"), "", ns.Name)
	}
	return true, ns, tracker.Update(corev1.SchemeGroupVersion.WithResource("namespaces"), ns, "")
}

// remove deletes an object of gvr, or marks it deleted if it has
// finalizers.
func (f *fakeCluster) remove(gvr schema.GroupVersionResource, ns, name string) error {
	tracker := f.metadata.Tracker()
	obj, err := tracker.Get(gvr, ns, name)
	if err != nil {
		return err
	}
	item := obj.(*metav1.PartialObjectMetadata).DeepCopy()
	if len(item.Finalizers) == 0 {
		return tracker.Delete(gvr, ns, name)
	}
	if item.DeletionTimestamp.IsZero() {
		now := metav1.Now()
		item.DeletionTimestamp = &now
		return tracker.Update(gvr, item, ns)
	}
	return nil
}

func (f *fakeCluster) deleteReactor(action clienttesting.Action) (bool, runtime.Object, error) {
	a := action.(clienttesting.DeleteAction)
	return true, nil, f.remove(a.GetResource(), a.GetNamespace(), a.GetName())
}

func (f *fakeCluster) deleteCollectionReactor(action clienttesting.Action) (bool, runtime.Object, error) {
	gvr, ns := action.GetResource(), action.GetNamespace()
	for _, item := range f.items(gvr, ns) {
		if err := f.remove(gvr, ns, item.Name); err != nil {
			return true, nil, err
		}
	}
	return true, nil, nil
}

// items lists the tracker's objects of gvr in ns.
func (f *fakeCluster) items(gvr schema.GroupVersionResource, ns string) []*metav1.PartialObjectMetadata {
	obj, err := f.metadata.Tracker().List(gvr, schema.GroupVersionKind{Group: "fake-metadata-client-group", Version: "v1"}, ns)
	if err != nil {
		panic(err)
	}
	var out []*metav1.PartialObjectMetadata
	for _, raw := range obj.(*metav1.List).Items {
		out = append(out, raw.Object.(*metav1.PartialObjectMetadata))
	}
	return out
}

// namespace returns the namespace from the tracker, nil if it is gone.
func (f *fakeCluster) namespace(t *testing.T, name string) *corev1.Namespace {
	t.Helper()
	obj, err := f.core.Tracker().Get(corev1.SchemeGroupVersion.WithResource("namespaces"), "", name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*corev1.Namespace)
}

// actions returns the metadata client's actions as "verb resource[/name]".
func (f *fakeCluster) metadataActions() []string {
	var out []string
	for _, a := range f.metadata.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if d, ok := a.(clienttesting.DeleteAction); ok {
			s += "/" + d.GetName()
		}
		out = append(out, s)
	}
	return out
}

func deletingNamespace(name string) *corev1.Namespace {
	deleted := metav1.NewTime(time.Now().Add(-time.Minute))
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), DeletionTimestamp: &deleted},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

func activeNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

func object(gvr schema.GroupVersionResource, kind, ns, name string, finalizers ...string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: gvr.GroupVersion().String(), Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers},
	}
}

func condition(ns *corev1.Namespace, t corev1.NamespaceConditionType) string {
	for _, c := range ns.Status.Conditions {
		if c.Type == t {
			return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return "<none>"
}
