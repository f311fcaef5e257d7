package resourcequota

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/controller-manager/app"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// testDiscovery lists configmaps, secrets, resourcequotas, events (ignored)
// and widgets.example.com.
func testDiscovery() ([]*metav1.APIResourceList, error) {
	verbs := metav1.Verbs{"create", "delete", "get", "list", "watch"}
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: verbs},
			{Name: "secrets", Namespaced: true, Kind: "Secret", Verbs: verbs},
			{Name: "resourcequotas", Namespaced: true, Kind: "ResourceQuota", Verbs: verbs},
			{Name: "resourcequotas/status", Namespaced: true, Kind: "ResourceQuota", Verbs: metav1.Verbs{"get", "update"}},
			{Name: "events", Namespaced: true, Kind: "Event", Verbs: verbs},
		}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: verbs},
		}},
	}, nil
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func secret(ns, name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func widget(ns, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
	}
}

func list(kv ...any) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i].(string))] = *resource.NewQuantity(int64(kv[i+1].(int)), resource.DecimalSI)
	}
	return out
}

func resourceQuota(ns, name string, hard corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
}

// fixture is a controller on fake clients holding objs (typed) and metas
// (metadata only, custom resources).
type fixture struct {
	ctx       context.Context
	c         *controller
	client    *fake.Clientset
	meta      *metadatafake.FakeMetadataClient
	informers *controllers.ResourceInformers
}

func newFixture(t *testing.T, objs []runtime.Object, metas ...runtime.Object) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset(objs...)
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	metaClient := metadatafake.NewSimpleMetadataClient(scheme, metas...)
	shared := informers.NewSharedInformerFactory(client, 0)
	started := make(chan struct{})
	resourceInformers := controllers.NewResourceInformers(ctx, shared, metaClient, 0, started)
	c := newController(ctx, config{
		quotas:    client.CoreV1(),
		informer:  shared.Core().V1().ResourceQuotas(),
		informers: resourceInformers,
		discover:  testDiscovery,
		options:   Options{DiscoveryPeriod: time.Second},
	})
	shared.Start(ctx.Done())
	close(started)
	t.Cleanup(func() {
		cancel()
		shared.Shutdown()
		resourceInformers.Wait()
	})
	return &fixture{ctx: ctx, c: c, client: client, meta: metaClient, informers: resourceInformers}
}

// syncMonitors starts the monitors and waits until they and the quota
// informer have listed.
func (f *fixture) syncMonitors(t *testing.T) {
	t.Helper()
	ctx := f.ctx
	if _, _, partial, err := f.c.monitors.Sync(ctx, nil); partial != nil || err != nil {
		t.Fatal(partial, err)
	}
	syncCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !cache.WaitFor(syncCtx, "", append(f.c.monitors.SyncedCheckers(), f.c.synced)...) {
		t.Fatal("informers did not sync")
	}
}

// statusUpdates are the quotas written with UpdateStatus.
func (f *fixture) statusUpdates() []*corev1.ResourceQuota {
	var out []*corev1.ResourceQuota
	for _, a := range f.client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			out = append(out, u.GetObject().(*corev1.ResourceQuota))
		}
	}
	return out
}

func TestResourceQuotaControllerSyncComputesUsage(t *testing.T) {
	hard := list("configmaps", 10, "count/configmaps", 10, "count/secrets", 5,
		"count/widgets.example.com", 3, "count/events", 100, "requests.cpu", 4, "count/gadgets.example.com", 2)
	q := resourceQuota("a", "q", hard)
	f := newFixture(t,
		[]runtime.Object{q, configMap("a", "one"), configMap("a", "two"), secret("a", "s"), configMap("b", "other")},
		widget("a", "w"), widget("b", "w"))
	f.syncMonitors(t)
	f.client.ClearActions()

	if err := f.c.syncQuota(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	updates := f.statusUpdates()
	if len(updates) != 1 {
		t.Fatalf("want 1 status update, got %d", len(updates))
	}
	got := updates[0].Status
	if !quota.Equals(got.Hard, hard) {
		t.Errorf("status.hard = %v, want spec.hard %v", got.Hard, hard)
	}
	// events are ignored, requests.cpu and gadgets have no evaluator.
	want := list("configmaps", 2, "count/configmaps", 2, "count/secrets", 1, "count/widgets.example.com", 1)
	if !quota.Equals(got.Used, want) {
		t.Errorf("status.used = %v, want %v", got.Used, want)
	}
}

func TestResourceQuotaControllerWritesOnlyChanges(t *testing.T) {
	hard := list("configmaps", 10, "count/secrets", 5)
	current := resourceQuota("a", "current", hard)
	current.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: list("configmaps", 1, "count/secrets", 0)}
	staleUsed := current.DeepCopy()
	staleUsed.Name = "stale-used"
	staleUsed.Status.Used = list("configmaps", 3, "count/secrets", 0)
	staleHard := current.DeepCopy()
	staleHard.Name = "stale-hard"
	staleHard.Spec.Hard = list("configmaps", 20, "count/secrets", 5)

	f := newFixture(t, []runtime.Object{current, staleUsed, staleHard, configMap("a", "one")})
	f.syncMonitors(t)
	for _, tc := range []struct {
		q         *corev1.ResourceQuota
		wantWrite bool
	}{{current, false}, {staleUsed, true}, {staleHard, true}} {
		f.client.ClearActions()
		if err := f.c.syncQuota(context.Background(), tc.q); err != nil {
			t.Fatal(err)
		}
		updates := f.statusUpdates()
		if got := len(updates) == 1; got != tc.wantWrite || len(updates) > 1 {
			t.Errorf("%s: %d status updates, want write %v", tc.q.Name, len(updates), tc.wantWrite)
			continue
		}
		if tc.wantWrite {
			want := corev1.ResourceQuotaStatus{Hard: tc.q.Spec.Hard, Used: list("configmaps", 1, "count/secrets", 0)}
			if got := updates[0].Status; !quota.Equals(got.Hard, want.Hard) || !quota.Equals(got.Used, want.Used) {
				t.Errorf("%s: status %v, want %v", tc.q.Name, got, want)
			}
		}
	}
}

func TestResourceQuotaControllerMissingUsageQueue(t *testing.T) {
	hard := list("configmaps", 10)
	fresh := resourceQuota("a", "fresh", hard)
	current := resourceQuota("a", "current", hard)
	current.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: list("configmaps", 0)}
	noUsed := current.DeepCopy()
	noUsed.Status.Used = nil
	f := newFixture(t, nil)
	logger := klog.Background()
	for _, tc := range []struct {
		q           *corev1.ResourceQuota
		wantMissing bool
	}{{fresh, true}, {noUsed, true}, {current, false}} {
		f.c.addQuota(logger, tc.q)
		if got := f.c.missingUsage.Len() == 1; got != tc.wantMissing {
			t.Errorf("%s: in missing usage queue %v, want %v", tc.q.Name, got, tc.wantMissing)
		}
		if got := f.c.queue.Len() == 1; got == tc.wantMissing {
			t.Errorf("%s: in regular queue %v, want %v", tc.q.Name, got, !tc.wantMissing)
		}
		for f.c.missingUsage.Len() > 0 {
			k, _ := f.c.missingUsage.Get()
			f.c.missingUsage.Done(k)
		}
		for f.c.queue.Len() > 0 {
			k, _ := f.c.queue.Get()
			f.c.queue.Done(k)
		}
	}
}

// TestResourceQuotaControllerReplenishes runs the controller: a new quota
// gets its status, and creating and deleting counted objects (typed and
// custom) moves used without waiting for the resync.
func TestResourceQuotaControllerReplenishes(t *testing.T) {
	f := newFixture(t, []runtime.Object{configMap("a", "one"), configMap("a", "two")}, widget("a", "w"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	hard := list("configmaps", 10, "count/secrets", 5, "count/widgets.example.com", 3)
	if _, err := f.client.CoreV1().ResourceQuotas("a").Create(ctx, resourceQuota("a", "q", hard), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed := func(want corev1.ResourceList) {
		t.Helper()
		var last corev1.ResourceQuotaStatus
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			q, err := f.client.CoreV1().ResourceQuotas("a").Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = q.Status
			return quota.Equals(q.Status.Hard, hard) && quota.Equals(q.Status.Used, want), nil
		})
		if err != nil {
			t.Fatalf("waiting for used %v: %v (last status %v)", want, err, last)
		}
	}
	waitUsed(list("configmaps", 2, "count/secrets", 0, "count/widgets.example.com", 1))

	if err := f.client.CoreV1().ConfigMaps("a").Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.CoreV1().Secrets("a").Create(ctx, secret("a", "s"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.meta.Tracker().Add(widget("a", "w2")); err != nil {
		t.Fatal(err)
	}
	waitUsed(list("configmaps", 1, "count/secrets", 1, "count/widgets.example.com", 2))
}

// TestResourceQuotaControllerDescriptor checks the descriptor and that
// building the controller does no I/O: the server it is given does not
// exist.
func TestResourceQuotaControllerDescriptor(t *testing.T) {
	d := Descriptor()
	if d.Name != "resourcequota-controller" || !slices.Equal(d.Aliases, []string{"resourcequota"}) || d.DisabledByDefault || d.New == nil {
		t.Fatalf("descriptor: %+v", d)
	}
	client := fake.NewClientset()
	shared := informers.NewSharedInformerFactory(client, 0)
	metadataClient := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	started := make(chan struct{})
	c, err := d.New(context.Background(), controllers.Context{ControllerContext: app.ControllerContext{
		ClientBuilder:    clientbuilder.SimpleControllerClientBuilder{ClientConfig: &rest.Config{Host: "https://127.0.0.1:1"}},
		InformerFactory:  shared,
		InformersStarted: started,
	}, ResourceInformers: controllers.NewResourceInformers(context.Background(), shared, metadataClient, 0, started)})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != d.Name {
		t.Errorf("name %q, want %q", c.Name(), d.Name)
	}
	if a := client.Actions(); len(a) != 0 {
		t.Errorf("actions while building: %v", a)
	}
}
