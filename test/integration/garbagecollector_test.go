package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/garbagecollector"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// gcTimeout bounds every wait on the garbage collector; it takes
// milliseconds, the margin is for a loaded machine.
const gcTimeout = 30 * time.Second

// gcOptions make the collector follow new resources within a second.
var gcOptions = garbagecollector.Options{DiscoveryPeriod: 500 * time.Millisecond}

// gcStart starts a server running the garbage collector.
func gcStart(t *testing.T) *testserver.Server {
	t.Helper()
	s := startGeneric(t)
	runControllers(t, s, garbagecollector.DescriptorWithOptions(gcOptions))
	return s
}

// gcEventually polls cond until it holds, failing after gcTimeout with
// cond's last error.
func gcEventually(t testing.TB, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, gcTimeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s (last error: %v)", gcTimeout, what, last)
	}
}

// gcOwner is an owner reference to obj, of apiVersion and kind.
func gcOwner(obj metav1.Object, apiVersion, kind string, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), BlockOwnerDeletion: &block}
}

// gcConfigMapOwner is an owner reference to configmap cm.
func gcConfigMapOwner(cm *corev1.ConfigMap) metav1.OwnerReference {
	return gcOwner(cm, "v1", "ConfigMap", false)
}

// gcConfigMap creates configmap ns/name with owners and finalizers.
func gcConfigMap(t testing.TB, c kubernetes.Interface, ns, name string, finalizers []string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, OwnerReferences: owners, Finalizers: finalizers,
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// gcDelete deletes configmap ns/name with policy.
func gcDelete(t testing.TB, c kubernetes.Interface, ns, name string, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := c.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
}

// gcConfigMapGone is a condition: configmap ns/name does not exist.
func gcConfigMapGone(c kubernetes.Interface, ns, name string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("%s/%s still there: owners %v, finalizers %v, deletionTimestamp %v", ns, name, cm.OwnerReferences, cm.Finalizers, cm.DeletionTimestamp)
	}
}

// gcWaitGone waits until configmaps ns/names do not exist.
func gcWaitGone(t testing.TB, c kubernetes.Interface, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		gcEventually(t, "configmap "+ns+"/"+name+" gone", gcConfigMapGone(c, ns, name))
	}
}

// gcGet gets configmap ns/name, which must exist.
func gcGet(t testing.TB, c kubernetes.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// TestGarbageCollectorBackground: deleting an owner deletes its
// dependents, and theirs; a dependent that another owner keeps loses only
// the reference to the deleted owner.
func TestGarbageCollectorBackground(t *testing.T) {
	t.Parallel()
	s := gcStart(t)
	c := s.Client
	const ns = "default"

	owner := gcConfigMap(t, c, ns, "owner", nil)
	keeper := gcConfigMap(t, c, ns, "keeper", nil)
	child := gcConfigMap(t, c, ns, "child", nil, gcConfigMapOwner(owner))
	gcConfigMap(t, c, ns, "grandchild", nil, gcConfigMapOwner(child))
	gcConfigMap(t, c, ns, "child-2", nil, gcConfigMapOwner(owner))
	gcConfigMap(t, c, ns, "shared", nil, gcConfigMapOwner(owner), gcConfigMapOwner(keeper))

	gcDelete(t, c, ns, "owner", metav1.DeletePropagationBackground)
	gcWaitGone(t, c, ns, "child", "child-2", "grandchild")
	gcEventually(t, "shared to lose its reference to owner", func(ctx context.Context) (bool, error) {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "shared", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == keeper.UID, fmt.Errorf("owners %v", cm.OwnerReferences)
	})
	gcGet(t, c, ns, "keeper")
}

// TestGarbageCollectorDanglingOwner: a dependent whose owner never
// existed (no object by that name, or one with another uid) is deleted;
// one whose owner exists stays.
func TestGarbageCollectorDanglingOwner(t *testing.T) {
	t.Parallel()
	s := gcStart(t)
	c := s.Client
	const ns = "default"

	impostor := gcConfigMap(t, c, ns, "impostor", nil)
	gcConfigMap(t, c, ns, "no-owner-by-that-name", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never", UID: uuid.NewUUID()})
	gcConfigMap(t, c, ns, "owner-has-another-uid", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "impostor", UID: uuid.NewUUID()})
	gcConfigMap(t, c, ns, "owned", nil, gcConfigMapOwner(impostor))

	gcWaitGone(t, c, ns, "no-owner-by-that-name", "owner-has-another-uid")
	if cm := gcGet(t, c, ns, "owned"); len(cm.OwnerReferences) != 1 {
		t.Errorf("owned lost its owner: %v", cm.OwnerReferences)
	}
	gcGet(t, c, ns, "impostor")
}

// TestGarbageCollectorForeground: an owner deleted in the foreground stays,
// with the foregroundDeletion finalizer, while a dependent that blocks its
// deletion exists; its dependents are deleted; then it goes.
func TestGarbageCollectorForeground(t *testing.T) {
	t.Parallel()
	s := gcStart(t)
	c := s.Client
	ctx := context.Background()
	const ns, hold = "default", "example.com/hold"

	owner := gcConfigMap(t, c, ns, "owner", nil)
	block := gcOwner(owner, "v1", "ConfigMap", true)
	gcConfigMap(t, c, ns, "held", []string{hold}, block)
	gcConfigMap(t, c, ns, "blocking", nil, block)
	gcConfigMap(t, c, ns, "not-blocking", nil, gcConfigMapOwner(owner))

	gcDelete(t, c, ns, "owner", metav1.DeletePropagationForeground)
	gcWaitGone(t, c, ns, "blocking", "not-blocking")
	gcEventually(t, "held to be deleted", func(ctx context.Context) (bool, error) {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
		return err == nil && cm.DeletionTimestamp != nil, err
	})
	got := gcGet(t, c, ns, "owner")
	if got.DeletionTimestamp == nil || len(got.Finalizers) != 1 || got.Finalizers[0] != metav1.FinalizerDeleteDependents {
		t.Fatalf("owner while held exists: deletionTimestamp %v, finalizers %v", got.DeletionTimestamp, got.Finalizers)
	}

	if _, err := c.CoreV1().ConfigMaps(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	gcWaitGone(t, c, ns, "held", "owner")
}

// TestGarbageCollectorOrphan: an owner deleted with the orphan policy goes
// away and its dependents stay, without the reference to it.
func TestGarbageCollectorOrphan(t *testing.T) {
	t.Parallel()
	s := gcStart(t)
	c := s.Client
	const ns = "default"

	owner := gcConfigMap(t, c, ns, "owner", nil)
	other := gcConfigMap(t, c, ns, "other", nil)
	gcConfigMap(t, c, ns, "orphan-1", nil, gcOwner(owner, "v1", "ConfigMap", true))
	gcConfigMap(t, c, ns, "orphan-2", nil, gcConfigMapOwner(owner), gcConfigMapOwner(other))

	gcDelete(t, c, ns, "owner", metav1.DeletePropagationOrphan)
	gcWaitGone(t, c, ns, "owner")
	if cm := gcGet(t, c, ns, "orphan-1"); len(cm.OwnerReferences) != 0 {
		t.Errorf("orphan-1 owners: %v", cm.OwnerReferences)
	}
	if cm := gcGet(t, c, ns, "orphan-2"); len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != other.UID {
		t.Errorf("orphan-2 owners: %v", cm.OwnerReferences)
	}
}

// TestGarbageCollectorClusterScopedOwner: a cluster-scoped owner (a
// ClusterRole, a Namespace) owns namespaced objects in several namespaces
// and cluster-scoped ones; deleting it deletes them all.
func TestGarbageCollectorClusterScopedOwner(t *testing.T) {
	t.Parallel()
	s := gcStart(t)
	c := s.Client
	ctx := context.Background()
	createNamespace(t, c, "team-a")
	createNamespace(t, c, "team-b")

	role, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gc-owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roleRef := gcOwner(role, "rbac.authorization.k8s.io/v1", "ClusterRole", false)
	gcConfigMap(t, c, "team-a", "of-role", nil, roleRef)
	gcConfigMap(t, c, "team-b", "of-role", nil, roleRef)
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
		Name: "gc-owned", OwnerReferences: []metav1.OwnerReference{roleRef},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nsOwner, err := c.CoreV1().Namespaces().Get(ctx, "team-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gcConfigMap(t, c, "team-a", "of-namespace", nil, gcOwner(nsOwner, "v1", "Namespace", false))

	if err := c.RbacV1().ClusterRoles().Delete(ctx, "gc-owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gcWaitGone(t, c, "team-a", "of-role")
	gcWaitGone(t, c, "team-b", "of-role")
	gcEventually(t, "clusterrole gc-owned gone", func(ctx context.Context) (bool, error) {
		_, err := c.RbacV1().ClusterRoles().Get(ctx, "gc-owned", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	gcGet(t, c, "team-a", "of-namespace")

	// Without a namespace controller, the namespace object goes away
	// only once its finalizer is removed.
	if err := c.CoreV1().Namespaces().Delete(ctx, "team-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nsOwner, err = c.CoreV1().Namespaces().Get(ctx, "team-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsOwner.Spec.Finalizers = nil
	if _, err := c.CoreV1().Namespaces().Finalize(ctx, nsOwner, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gcWaitGone(t, c, "team-a", "of-namespace")
}

// gcCreateCRD creates a namespaced CRD <plural>.gc.example.com (v1, any
// content) and waits until discovery lists it.
func gcCreateCRD(t testing.TB, s *testserver.Server, plural, kind string) schema.GroupVersionResource {
	t.Helper()
	return createCRD(t, s, "gc.example.com", plural, kind)
}

// gcCreateCustom creates a custom resource ns/name of gvr (kind).
func gcCreateCustom(t testing.TB, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind, ns, name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
	}}
	obj.SetOwnerReferences(owners)
	var created *unstructured.Unstructured
	// The resource may be listed in discovery before the API server
	// serves it on every path; retry until it does.
	gcEventually(t, "creating "+gvr.Resource+" "+name, func(ctx context.Context) (bool, error) {
		var err error
		created, err = dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		return err == nil, err
	})
	return created
}

// TestGarbageCollectorCustomResources: custom resources of a definition
// created after the collector started are collected like native ones,
// owned by a configmap and owning one; deleting a definition whose custom
// resources own objects does not keep the collector from working.
func TestGarbageCollectorCustomResources(t *testing.T) {
	t.Parallel()
	s := gcStart(t)
	c := s.Client
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	const ns = "default"

	widgets := gcCreateCRD(t, s, "widgets", "Widget")
	owner := gcConfigMap(t, c, ns, "owner", nil)
	widget := gcCreateCustom(t, dyn, widgets, "Widget", ns, "w1", gcConfigMapOwner(owner))
	gcConfigMap(t, c, ns, "of-widget", nil, gcOwner(widget, "gc.example.com/v1", "Widget", false))
	gcDelete(t, c, ns, "owner", metav1.DeletePropagationBackground)
	gcEventually(t, "widget w1 gone", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(widgets).Namespace(ns).Get(ctx, "w1", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	gcWaitGone(t, c, ns, "of-widget")

	// A custom resource owns a configmap, and its definition is deleted.
	gadgets := gcCreateCRD(t, s, "gadgets", "Gadget")
	holder := gcConfigMap(t, c, ns, "holder", nil)
	gadget := gcCreateCustom(t, dyn, gadgets, "Gadget", ns, "g1", gcConfigMapOwner(holder))
	gcConfigMap(t, c, ns, "of-gadget", nil, gcOwner(gadget, "gc.example.com/v1", "Gadget", true))
	crds := apiextensionsclient.NewForConfigOrDie(s.AdminConfig).ApiextensionsV1().CustomResourceDefinitions()
	if err := crds.Delete(ctx, "gadgets.gc.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gcEventually(t, "CRD gadgets gone", func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, "gadgets.gc.example.com", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	gcWaitGone(t, c, ns, "of-gadget")

	// The collector still works, for native and custom resources.
	after := gcConfigMap(t, c, ns, "after", nil)
	gcConfigMap(t, c, ns, "of-after", nil, gcConfigMapOwner(after))
	gcCreateCustom(t, dyn, widgets, "Widget", ns, "w2", gcConfigMapOwner(after))
	gcDelete(t, c, ns, "after", metav1.DeletePropagationBackground)
	gcWaitGone(t, c, ns, "of-after")
	gcEventually(t, "widget w2 gone", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(widgets).Namespace(ns).Get(ctx, "w2", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	gcGet(t, c, ns, "holder")
}

// BenchmarkGarbageCollector1000Dependents measures how long the collector
// takes to delete 1,000 configmaps whose owner was deleted (background).
func BenchmarkGarbageCollector1000Dependents(b *testing.B) {
	s := startGeneric(b)
	runControllers(b, s, garbagecollector.Descriptor())
	c := s.Client
	ctx := context.Background()
	const count, creators = 1000, 8

	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		ns := fmt.Sprintf("bench-%d", i)
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		owner := gcConfigMap(b, c, ns, "owner", nil)
		ref := gcConfigMapOwner(owner)
		var next atomic.Int64
		var wg sync.WaitGroup
		for range creators {
			wg.Go(func() {
				for j := next.Add(1); j <= count; j = next.Add(1) {
					gcConfigMap(b, c, ns, fmt.Sprintf("dep-%04d", j), nil, ref)
				}
			})
		}
		wg.Wait()
		b.StartTimer()

		gcDelete(b, c, ns, "owner", metav1.DeletePropagationBackground)
		gcEventually(b, "dependents gone", func(ctx context.Context) (bool, error) {
			l, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			return len(l.Items) == 0, fmt.Errorf("%d left", len(l.Items))
		})
	}
}

// TestGarbageCollectorOrphanBeforeResourceIsWatched (issue 28, defect 2):
// an owner deleted with the orphan policy before the collector watches
// its dependent's resource (a CRD created a moment before; the collector
// reads discovery every 30 s) must leave the dependent, without the
// reference, however the collector's learning of the resource and its
// handling of the orphan finalizer interleave. Twenty rounds run at once,
// each with a fresh CRD, loading the machine. In half, the owner is a
// custom resource of the same new CRD, listed first with others between
// it and its dependent, so that the collector queues the orphan finalizer
// before the dependent reaches its graph; in the other half, the owner is
// a configmap, which the collector watches already, so it handles the
// finalizer before it can know the dependent.
func TestGarbageCollectorOrphanBeforeResourceIsWatched(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Controllers: []string{"*"}})
	const rounds = 20
	var wg sync.WaitGroup
	errs := make([]error, rounds)
	for i := range rounds {
		wg.Go(func() { errs[i] = gcOrphanRound(s, i) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("round %d: %v", i, err)
		}
	}
}

// gcOrphanRound is a round of TestGarbageCollectorOrphanBeforeResourceIsWatched,
// run in its own goroutine: it creates CRD orphans<i>, an owner and a
// dependent, deletes the owner with the orphan policy and waits for the
// dependent to lose its reference, failing as soon as it is gone.
func gcOrphanRound(s *testserver.Server, i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	const ns = "default"
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	plural, kind := fmt.Sprintf("orphans%d", i), fmt.Sprintf("Orphan%d", i)
	gvr := schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: plural}
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + gvr.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvr.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
	if _, err := apiextensionsclient.NewForConfigOrDie(s.AdminConfig).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return err
	}
	create := func(name string, owners ...metav1.OwnerReference) (*unstructured.Unstructured, error) {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": kind}}
		obj.SetName(name)
		obj.SetOwnerReferences(owners)
		var created *unstructured.Unstructured
		// Until the new resource is served.
		err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			var err error
			created, err = dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			return err == nil, nil
		})
		if err != nil {
			return nil, fmt.Errorf("creating %s %s: %w", plural, name, err)
		}
		return created, nil
	}
	orphan := metav1.DeletePropagationOrphan
	deleteOrphan := metav1.DeleteOptions{PropagationPolicy: &orphan}
	var ownerRef metav1.OwnerReference
	if i%2 == 0 {
		owner, err := create("a-owner")
		if err != nil {
			return err
		}
		for j := range 20 {
			if _, err := create(fmt.Sprintf("a-other-%d", j)); err != nil {
				return err
			}
		}
		ownerRef = gcOwner(owner, gvr.GroupVersion().String(), kind, true)
		if _, err := create("b-dependent", ownerRef); err != nil {
			return err
		}
		if err := dyn.Resource(gvr).Namespace(ns).Delete(ctx, "a-owner", deleteOrphan); err != nil {
			return err
		}
	} else {
		name := fmt.Sprintf("orphan-owner-%d", i)
		owner, err := s.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		ownerRef = gcOwner(owner, "v1", "ConfigMap", true)
		if _, err := create("b-dependent", ownerRef); err != nil {
			return err
		}
		if err := s.Client.CoreV1().ConfigMaps(ns).Delete(ctx, name, deleteOrphan); err != nil {
			return err
		}
	}

	// The dependent loses the reference once the collector watches its
	// resource (within 30 s); it must exist at every look until then.
	// Without owner references, the collector leaves it alone.
	var last error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		dep, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "b-dependent", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, errors.New("the dependent of an owner deleted with the orphan policy was deleted")
		case err != nil:
			last = err
			return false, nil
		case len(dep.GetOwnerReferences()) != 0:
			last = fmt.Errorf("the dependent still has owner references %v", dep.GetOwnerReferences())
			return false, nil
		}
		return true, nil
	})
	if err != nil && last != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return err
}

// gcControllers runs the garbage collector with o against s, as
// runControllers does, until stop is called (or the test ends).
type gcControllers struct {
	cancel context.CancelFunc
	done   chan error
}

func gcRunControllers(t testing.TB, s *testserver.Server, o garbagecollector.Options) *gcControllers {
	t.Helper()
	opts := controllers.NewOptions([]controllers.Descriptor{garbagecollector.DescriptorWithOptions(o)})
	opts.Kubeconfig = s.AdminKubeconfig
	opts.UseServiceAccountCredentials = false
	opts.SecureServing.BindPort = 0
	opts.Generic.LeaderElection.LeaderElect = false
	opts.Generic.ClientConnection.QPS, opts.Generic.ClientConnection.Burst = -1, -1
	cfg, err := opts.Config()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &gcControllers{cancel: cancel, done: make(chan error, 1)}
	go func() { g.done <- controllers.Run(ctx, cfg) }()
	t.Cleanup(func() { g.stop(t) })
	return g
}

// stop stops the controllers and waits until they have; again is a no-op.
func (g *gcControllers) stop(t testing.TB) {
	t.Helper()
	if g.done == nil {
		return
	}
	g.cancel()
	if err := <-g.done; err != nil {
		t.Errorf("controllers: %v", err)
	}
	g.done = nil
}

// gcWaitCollecting waits until the collector collects: a dependent of a
// configmap deleted in the background goes. Its monitors have then read
// discovery and listed their resources.
func gcWaitCollecting(t testing.TB, c kubernetes.Interface, ns, name string) {
	t.Helper()
	owner := gcConfigMap(t, c, ns, name+"-owner", nil)
	gcConfigMap(t, c, ns, name+"-dependent", nil, gcConfigMapOwner(owner))
	gcDelete(t, c, ns, name+"-owner", metav1.DeletePropagationBackground)
	gcWaitGone(t, c, ns, name+"-dependent")
}

// TestGarbageCollectorOrphanSurvivesRestart (issue 28): orphaning does
// not depend on the collector's memory. In each round a new CRD is
// created after the running collector last read discovery; a configmap
// owns one of its custom resources, and another of them, created at once
// with others, owns a third. Both owners are deleted with the orphan
// policy at once; then the controllers are restarted (a new collector,
// which remembers nothing), in even rounds once the old one has let the
// configmap go, in odd rounds at once. Both dependents must stay, without
// the references. Half the collectors read discovery every 200 ms, half
// never again after they start.
func TestGarbageCollectorOrphanSurvivesRestart(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	const ns = "default"
	orphan := metav1.DeletePropagationOrphan
	deleteOrphan := metav1.DeleteOptions{PropagationPolicy: &orphan}
	period := func(i int) time.Duration {
		if i%4 < 2 {
			return time.Hour
		}
		return 200 * time.Millisecond
	}
	gc := gcRunControllers(t, s, garbagecollector.Options{DiscoveryPeriod: period(0)})
	gcWaitCollecting(t, s.Client, ns, "ready-0")

	const rounds = 12
	for i := range rounds {
		plural, kind := fmt.Sprintf("restarts%d", i), fmt.Sprintf("Restart%d", i)
		gvr := createCRD(t, s, "gc.example.com", plural, kind)
		cm := gcConfigMap(t, s.Client, ns, fmt.Sprintf("restart-owner-%d", i), nil)
		gcCreateCustom(t, dyn, gvr, kind, ns, "of-configmap", gcOwner(cm, "v1", "ConfigMap", true))
		owner := gcCreateCustom(t, dyn, gvr, kind, ns, "a-owner")
		for j := range 10 {
			gcCreateCustom(t, dyn, gvr, kind, ns, fmt.Sprintf("m-other-%d", j))
		}
		gcCreateCustom(t, dyn, gvr, kind, ns, "z-of-custom", gcOwner(owner, gvr.GroupVersion().String(), kind, true))
		if err := s.Client.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, deleteOrphan); err != nil {
			t.Fatal(err)
		}
		if err := dyn.Resource(gvr).Namespace(ns).Delete(ctx, "a-owner", deleteOrphan); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			gcWaitGone(t, s.Client, ns, cm.Name)
		}
		gc.stop(t)
		gc = gcRunControllers(t, s, garbagecollector.Options{DiscoveryPeriod: period(i + 1)})

		for _, name := range []string{"of-configmap", "z-of-custom"} {
			gcEventually(t, fmt.Sprintf("round %d: %s orphaned", i, name), func(ctx context.Context) (bool, error) {
				dep, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
				switch {
				case apierrors.IsNotFound(err):
					t.Fatalf("round %d: %s, the dependent of an owner deleted with the orphan policy, was deleted", i, name)
				case err != nil:
					return false, err
				case len(dep.GetOwnerReferences()) != 0:
					return false, fmt.Errorf("owner references %v", dep.GetOwnerReferences())
				}
				return true, nil
			})
		}
		gcWaitGone(t, s.Client, ns, cm.Name)
		gcEventually(t, fmt.Sprintf("round %d: custom owner gone", i), func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "a-owner", metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
		// The next round's CRD must be newer than the new collector's
		// first discovery.
		gcWaitCollecting(t, s.Client, ns, fmt.Sprintf("ready-%d", i+1))
	}
}
