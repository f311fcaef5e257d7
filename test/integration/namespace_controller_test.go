package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers/namespace"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// nsEventually polls cond every 50ms until it holds or timeout passes.
func nsEventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, last)
	}
}

// nsCreateCRD creates a namespaced CRD <plural>.nsctl.example.com (v1,
// any content) and waits until it is Established and served.
func nsCreateCRD(t testing.TB, s *testserver.Server, plural, kind string) schema.GroupVersionResource {
	t.Helper()
	return createCRD(t, s, "nsctl.example.com", plural, kind)
}

// preservingCRD is a namespaced CRD of one version, v1, whose objects keep
// whatever fields they are given.
func preservingCRD(group, plural, kind string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true),
				}},
			}},
		},
	}
}

// createCRD creates a namespaced CRD <plural>.<group> (v1, any content)
// and waits until it is Established and listed in discovery.
func createCRD(t testing.TB, s *testserver.Server, group, plural, kind string) schema.GroupVersionResource {
	t.Helper()
	ctx := context.Background()
	client := apiextensionsclient.NewForConfigOrDie(s.AdminConfig)
	crd := preservingCRD(group, plural, kind)
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nsEventually(t, 20*time.Second, crd.Name+" Established", func() (bool, error) {
		got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	// Discovery may lag the Established condition a moment, and the
	// aggregated document (/apis, which controllers read) may lag the
	// group's own; wait for the one the controllers use.
	nsEventually(t, 20*time.Second, plural+" in discovery", func() (bool, error) {
		lists, err := s.Client.Discovery().ServerPreferredNamespacedResources()
		if err != nil {
			return false, err
		}
		for _, list := range lists {
			if list.GroupVersion != gvr.GroupVersion().String() {
				continue
			}
			for _, r := range list.APIResources {
				if r.Name == plural {
					return true, nil
				}
			}
		}
		return false, nil
	})
	return gvr
}

// nsCreateCustom creates a custom resource of gvr (kind) in ns.
func nsCreateCustom(t testing.TB, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind, ns, name string, finalizers ...string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"size": int64(1)},
	}}
	if len(finalizers) > 0 {
		obj.SetFinalizers(finalizers)
	}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// nsDeleteAndWaitGone deletes the namespace and waits until it is gone.
func nsDeleteAndWaitGone(t testing.TB, c kubernetes.Interface, name string, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	if err := c.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nsWaitGone(t, c, name, timeout)
}

func nsWaitGone(t testing.TB, c kubernetes.Interface, name string, timeout time.Duration) {
	t.Helper()
	nsEventually(t, timeout, "namespace "+name+" gone", func() (bool, error) {
		ns, err := c.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("phase %s, spec.finalizers %v, conditions %+v", ns.Status.Phase, ns.Spec.Finalizers, ns.Status.Conditions)
	})
}

func nsCondition(ns *corev1.Namespace, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range ns.Status.Conditions {
		if ns.Status.Conditions[i].Type == t {
			return &ns.Status.Conditions[i]
		}
	}
	return nil
}

// TestNamespaceControllerDeletesContent: deleting a namespace deletes
// everything in it (built-in resources and custom resources of two CRDs),
// then the namespace itself; other namespaces keep their content.
func TestNamespaceControllerDeletesContent(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	runControllers(t, s, namespace.Descriptor())
	ctx := context.Background()
	c := s.Client
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	widgets := nsCreateCRD(t, s, "widgets", "Widget")
	gadgets := nsCreateCRD(t, s, "gadgets", "Gadget")

	const ns, other = "doomed", "kept"
	createNamespace(t, c, ns)
	createNamespace(t, c, other)
	for _, n := range []string{ns, other} {
		for i := range 2 {
			if _, err := c.CoreV1().ConfigMaps(n).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i)}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.CoreV1().Secrets(n).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoordinationV1().Leases(n).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.EventsV1().Events(n).Create(ctx, &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "e1"},
			EventTime:           metav1.NewMicroTime(time.Now()),
			ReportingController: "example.com/ctl",
			ReportingInstance:   "ctl-1",
			Action:              "Test",
			Reason:              "Tested",
			Type:                corev1.EventTypeNormal,
			Regarding:           corev1.ObjectReference{Kind: "ConfigMap", Name: "c0", Namespace: n},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		nsCreateCustom(t, dyn, widgets, "Widget", n, "w1")
		nsCreateCustom(t, dyn, gadgets, "Gadget", n, "g1")
	}

	nsDeleteAndWaitGone(t, c, ns, 25*time.Second)

	// The namespace may be created again, empty.
	createNamespace(t, c, ns)
	if l, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("configmaps in the new %s: %v %v", ns, l, err)
	}
	for _, gvr := range []schema.GroupVersionResource{widgets, gadgets} {
		if l, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
			t.Fatalf("%s in the new %s: %v %v", gvr.Resource, ns, l, err)
		}
	}
	// The other namespace is untouched.
	if l, err := c.CoreV1().ConfigMaps(other).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 2 {
		t.Fatalf("configmaps in %s: %v %v", other, l, err)
	}
	if _, err := dyn.Resource(gadgets).Namespace(other).Get(ctx, "g1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.CoreV1().Namespaces().Get(ctx, other, metav1.GetOptions{}); err != nil || n.Status.Phase != corev1.NamespaceActive || len(n.Status.Conditions) != 0 {
		t.Fatalf("namespace %s: %+v %v", other, n, err)
	}
}

// TestNamespaceControllerWaitsForFinalizers: a custom resource with a
// finalizer keeps its namespace Terminating, and the namespace's
// conditions say why; removing the finalizer lets the deletion finish.
func TestNamespaceControllerWaitsForFinalizers(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	runControllers(t, s, namespace.Descriptor())
	ctx := context.Background()
	c := s.Client
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	gadgets := nsCreateCRD(t, s, "gadgets", "Gadget")

	const ns = "held"
	createNamespace(t, c, ns)
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nsCreateCustom(t, dyn, gadgets, "Gadget", ns, "g1", "example.com/wait")
	nsCreateCustom(t, dyn, gadgets, "Gadget", ns, "g2")
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	var held *corev1.Namespace
	nsEventually(t, 20*time.Second, "NamespaceFinalizersRemaining", func() (bool, error) {
		n, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		held = n
		cond := nsCondition(n, corev1.NamespaceFinalizersRemaining)
		return cond != nil && cond.Status == corev1.ConditionTrue, nil
	})
	if held.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("phase %q, want Terminating", held.Status.Phase)
	}
	want := map[corev1.NamespaceConditionType]struct {
		status corev1.ConditionStatus
		reason string
		msg    string
	}{
		corev1.NamespaceFinalizersRemaining:      {corev1.ConditionTrue, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/wait in 1 resource instances"},
		corev1.NamespaceContentRemaining:         {corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: gadgets.nsctl.example.com has 1 resource instances"},
		corev1.NamespaceDeletionContentFailure:   {corev1.ConditionFalse, "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
		corev1.NamespaceDeletionDiscoveryFailure: {corev1.ConditionFalse, "ResourcesDiscovered", "All resources successfully discovered"},
		corev1.NamespaceDeletionGVParsingFailure: {corev1.ConditionFalse, "ParsedGroupVersions", "All legacy kube types successfully parsed"},
	}
	for typ, w := range want {
		cond := nsCondition(held, typ)
		if cond == nil || cond.Status != w.status || cond.Reason != w.reason || cond.Message != w.msg {
			t.Errorf("condition %s = %+v, want status %s reason %s message %q", typ, cond, w.status, w.reason, w.msg)
		}
	}
	// Everything else is gone already.
	if l, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("configmaps left: %v %v", l, err)
	}
	left, err := dyn.Resource(gadgets).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(left.Items) != 1 || left.Items[0].GetName() != "g1" || left.Items[0].GetDeletionTimestamp() == nil {
		t.Fatalf("gadgets left: %v %v", left, err)
	}

	if _, err := dyn.Resource(gadgets).Namespace(ns).Patch(ctx, "g1", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	nsWaitGone(t, c, ns, 20*time.Second)
}

// TestNamespaceControllerManyObjects: a namespace with 2,000 configmaps is
// TestNamespaceControllerManyObjects: a namespace with 2,000 objects across
// five resources (configmaps, secrets, serviceaccounts, leases and custom
// resources) is emptied and goes away.
func TestNamespaceControllerManyObjects(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	runControllers(t, s, namespace.Descriptor())
	ctx := context.Background()
	c := s.Client
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	widgets := nsCreateCRD(t, s, "widgets", "Widget")

	const ns, perResource, workers = "crowded", 400, 8
	createNamespace(t, c, ns)
	create := []func(name string) error{
		func(name string) error {
			_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": strings.Repeat("v", 64)}}, metav1.CreateOptions{})
			return err
		},
		func(name string) error {
			_, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		},
		func(name string) error {
			_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		},
		func(name string) error {
			_, err := c.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		},
		func(name string) error {
			cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": widgets.GroupVersion().String(), "kind": "Widget", "metadata": map[string]any{"name": name}}}
			_, err := dyn.Resource(widgets).Namespace(ns).Create(ctx, cr, metav1.CreateOptions{})
			return err
		},
	}
	total := int64(perResource * len(create))
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < total; i = next.Add(1) - 1 {
				if err := create[i%int64(len(create))](fmt.Sprintf("o-%04d", i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if l, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != perResource {
		t.Fatalf("want %d configmaps: %v", perResource, err)
	}

	// Generous: the machine may be busy (race detector, parallel packages).
	nsDeleteAndWaitGone(t, c, ns, 90*time.Second)
	// Nothing was left behind in storage.
	for _, gvr := range []schema.GroupVersionResource{corev1.SchemeGroupVersion.WithResource("secrets"), coordinationv1.SchemeGroupVersion.WithResource("leases"), widgets} {
		if l, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
			t.Errorf("%s left in the deleted namespace: %v", gvr.Resource, err)
		}
	}
}
