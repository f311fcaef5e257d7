package rootcacertpublisher

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/gcp-project/gcp/test/informertest"
)

const ca = "-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func configMap(ns string, data map[string]string, annotations map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: ns, Annotations: annotations}, Data: data}
}

func writes(client *fake.Clientset) map[string]string {
	out := map[string]string{}
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "configmaps" && (a.GetVerb() == "create" || a.GetVerb() == "update") {
			out[a.GetNamespace()] = a.GetVerb()
		}
	}
	return out
}

// newSynced builds a publisher over objs with synced informers, not
// running workers.
func newSynced(t *testing.T, objs ...runtime.Object) (*Publisher, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	p, err := New(factory, client, []byte(ca))
	if err != nil {
		t.Fatal(err)
	}
	informertest.Start(t, factory, p.queue)
	return p, client
}

func TestSync(t *testing.T) {
	want := map[string]string{DataKey: ca}
	described := map[string]string{DescriptionAnnotation: Description}
	p, client := newSynced(t,
		namespace("new", corev1.NamespaceActive),
		namespace("going", corev1.NamespaceTerminating),
		namespace("good", corev1.NamespaceActive), configMap("good", want, described),
		namespace("custom", corev1.NamespaceActive), configMap("custom", want, map[string]string{DescriptionAnnotation: "mine"}),
		namespace("edited", corev1.NamespaceActive), configMap("edited", map[string]string{DataKey: "x", "extra": "y"}, described),
		namespace("undescribed", corev1.NamespaceActive), configMap("undescribed", want, nil),
	)
	for _, ns := range []string{"new", "going", "good", "custom", "edited", "undescribed", "missing"} {
		if err := p.sync(context.Background(), ns); err != nil {
			t.Errorf("sync %s: %v", ns, err)
		}
	}
	wantWrites := map[string]string{"new": "create", "edited": "update", "undescribed": "update"}
	if got := writes(client); !maps.Equal(got, wantWrites) {
		t.Errorf("writes %v, want %v", got, wantWrites)
	}
	for _, ns := range []string{"new", "edited", "undescribed"} {
		cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), ConfigMapName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(cm.Data, want) || cm.Annotations[DescriptionAnnotation] != Description {
			t.Errorf("%s: data %v, annotations %v", ns, cm.Data, cm.Annotations)
		}
	}
}

func TestSyncCreateErrors(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, ConfigMapName, errors.New("namespace is terminating"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for name, tc := range map[string]struct {
		err  error
		fail bool
	}{
		"namespace gone": {err: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns")},
		"terminating":    {err: terminating},
		// Retried, to check the content of the existing one.
		"already exists": {err: apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, ConfigMapName), fail: true},
		"other":          {err: apierrors.NewInternalError(errors.New("boom")), fail: true},
	} {
		t.Run(name, func(t *testing.T) {
			p, client := newSynced(t, namespace("ns", corev1.NamespaceActive))
			client.PrependReactor("create", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			if err := p.sync(context.Background(), "ns"); (err != nil) != tc.fail {
				t.Errorf("sync: %v, want failure %v", err, tc.fail)
			}
		})
	}
}

// The publisher's informer is not the factory's ordinary ConfigMap
// informer, which other controllers may share.
func TestConfigMapInformerIsSeparate(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	mine := ConfigMapInformer(factory)
	if mine != ConfigMapInformer(factory) {
		t.Error("ConfigMapInformer returned two informers")
	}
	if mine == factory.Core().V1().ConfigMaps().Informer() {
		t.Error("ConfigMapInformer is the factory's ConfigMap informer")
	}
}

func TestRunRestores(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset(namespace("ns", corev1.NamespaceActive))
	factory := informers.NewSharedInformerFactory(client, 0)
	p, err := New(factory, client, []byte(ca))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; factory.Shutdown() }()

	cms := client.CoreV1().ConfigMaps("ns")
	published := func() bool {
		cm, err := cms.Get(ctx, ConfigMapName, metav1.GetOptions{})
		return err == nil && cm.Data[DataKey] == ca && len(cm.Data) == 1
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	waitFor("the ConfigMap", published)

	cm, err := cms.Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{DataKey: "tampered"}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the edit to be reverted", published)

	if err := cms.Delete(ctx, ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the ConfigMap to be recreated", published)
}
