package etcdstorage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/test/poll"
)

// startEtcd runs an embedded member for the test, in a short temporary
// path (unix socket paths are limited to about 100 bytes).
func startEtcd(t *testing.T) *etcd.Handle {
	t.Helper()
	dir, err := os.MkdirTemp("", "etcdstorage")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	h, err := etcd.Start(context.Background(), etcd.DefaultConfig(filepath.Join(dir, "etcd")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// configMapStorage builds configmaps' storage through the RESTOptions of a
// getter that k8s.io/apiserver's etcd options made (watch cache on or off),
// wrapped by WithClients, and returns it with its destroy function and
// the clients it was given. tune, if any, changes the storage
// configuration first.
func configMapStorage(t *testing.T, h *etcd.Handle, watchCache bool, tune ...func(*storagebackend.Config)) (storage.Interface, func(), *[]*clientv3.Client) {
	t.Helper()
	o := genericoptions.NewEtcdOptions(storagebackend.NewDefaultConfig("/registry", scheme.Codecs.CodecForVersions(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), scheme.Codecs.UniversalDeserializer(), corev1.SchemeGroupVersion, corev1.SchemeGroupVersion)))
	o.StorageConfig.Transport.ServerList = h.ClientURLs()
	o.EnableWatchCache = watchCache
	for _, f := range tune {
		f(&o.StorageConfig)
	}
	inner := o.CreateRESTOptionsGetter(&genericoptions.SimpleStorageFactory{StorageConfig: o.StorageConfig}, nil)
	var clients []*clientv3.Client
	g := WithClients(inner, func() (*clientv3.Client, error) {
		c := h.InProcessClient()
		clients = append(clients, c)
		return c, nil
	})
	gr := schema.GroupResource{Resource: "configmaps"}
	opts, err := g.GetRESTOptions(gr, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	prefix := opts.ResourcePrefix
	if !strings.HasPrefix(prefix, "/") {
		prefix = "/" + prefix
	}
	s, destroy, err := opts.Decorator(opts.StorageConfig, prefix,
		func(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc(prefix+"/", obj) },
		func() runtime.Object { return &corev1.ConfigMap{} }, func() runtime.Object { return &corev1.ConfigMapList{} },
		storage.DefaultNamespaceScopedAttr, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(destroy)
	return s, destroy, &clients
}

func TestWatchCacheAsTheOptionsSay(t *testing.T) {
	h := startEtcd(t)
	for _, watchCache := range []bool{true, false} {
		s, _, _ := configMapStorage(t, h, watchCache)
		_, isCached := s.(*cacherstorage.CacheDelegator)
		if isCached != watchCache {
			t.Errorf("watch cache on: %v; storage %T", watchCache, s)
		}
	}
	if !isUndecorated(generic.UndecoratedStorage) || isUndecorated(generic.StorageDecorator(nil)) {
		t.Error("isUndecorated does not recognise generic.UndecoratedStorage")
	}
}

func TestStorageThroughInProcessClients(t *testing.T) {
	h := startEtcd(t)
	s, destroy, clients := configMapStorage(t, h, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	poll.Until(t, 10*time.Millisecond, 30*time.Second, func() error {
		if err := s.ReadinessCheck(); err != nil {
			return fmt.Errorf("watch cache not ready: %w", err)
		}
		return nil
	})
	key := "/configmaps/default/hello"
	w, err := s.Watch(ctx, "/configmaps/default", storage.ListOptions{ResourceVersion: "0", Predicate: storage.Everything, Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	out := &corev1.ConfigMap{}
	in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"}, Data: map[string]string{"a": "b"}}
	if err := s.Create(ctx, key, in, out, 0); err != nil {
		t.Fatal(err)
	}
	if out.ResourceVersion == "" {
		t.Fatal("created object has no resourceVersion")
	}
	select {
	case ev := <-w.ResultChan():
		if o, err := meta.Accessor(ev.Object); err != nil || ev.Type != watch.Added || o.GetName() != "hello" {
			t.Fatalf("watch event %v %#v", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event for the create")
	}
	// A consistent read (served from the watch cache once it has caught
	// up, which needs etcd's progress notifications on this client's
	// watch stream).
	got := &corev1.ConfigMap{}
	if err := s.Get(ctx, key, storage.GetOptions{}, got); err != nil || got.Data["a"] != "b" {
		t.Fatalf("get: %v %v", err, got.Data)
	}
	list := &corev1.ConfigMapList{}
	if err := s.GetList(ctx, "/configmaps/default", storage.ListOptions{Predicate: storage.Everything, Recursive: true}, list); err != nil || len(list.Items) != 1 {
		t.Fatalf("consistent list: %v, %d items", err, len(list.Items))
	}

	// The storage layer learned that etcd answers watch progress requests
	// (without it the watch cache serves no consistent read).
	poll.UntilTrue(t, 10*time.Millisecond, 30*time.Second, "the storage layer learns that etcd supports watch progress requests", func() bool {
		return etcdfeature.DefaultFeatureSupportChecker.Supports(storage.RequestWatchProgress)
	})

	// One client each for the compactor, the feature check and the
	// storage; destroying the only storage closes them all.
	if n := len(*clients); n != 3 {
		t.Fatalf("%d clients made, want 3 (the compactor's, the feature check's, the storage's)", n)
	}
	destroy()
	for i, c := range *clients {
		if c.Ctx().Err() == nil {
			t.Errorf("client %d still open after the storage was destroyed", i)
		}
	}
}
