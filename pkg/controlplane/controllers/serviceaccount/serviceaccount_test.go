package serviceaccount

import (
	"context"
	"errors"
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

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func creates(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "serviceaccounts" {
			out = append(out, a.GetNamespace())
		}
	}
	return out
}

// newSynced builds a controller over objs with synced informers, not
// running workers.
func newSynced(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts(), client)
	if err != nil {
		t.Fatal(err)
	}
	informertest.Start(t, factory, c.queue)
	return c, client
}

func TestSync(t *testing.T) {
	existing := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: "has"}}
	c, client := newSynced(t,
		namespace("active", corev1.NamespaceActive),
		namespace("has", corev1.NamespaceActive),
		namespace("going", corev1.NamespaceTerminating),
		existing)
	for _, ns := range []string{"active", "has", "going", "missing"} {
		if err := c.sync(context.Background(), ns); err != nil {
			t.Errorf("sync %s: %v", ns, err)
		}
	}
	if got := creates(client); len(got) != 1 || got[0] != "active" {
		t.Errorf("created in %v, want [active]", got)
	}
	if _, err := client.CoreV1().ServiceAccounts("active").Get(context.Background(), DefaultName, metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
}

func TestSyncTolerates(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, DefaultName, errors.New("namespace is terminating"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for name, tc := range map[string]struct {
		err  error
		fail bool
	}{
		"already exists": {err: apierrors.NewAlreadyExists(schema.GroupResource{Resource: "serviceaccounts"}, DefaultName)},
		"terminating":    {err: terminating},
		"other":          {err: apierrors.NewInternalError(errors.New("boom")), fail: true},
	} {
		t.Run(name, func(t *testing.T) {
			c, client := newSynced(t, namespace("ns", corev1.NamespaceActive))
			client.PrependReactor("create", "serviceaccounts", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			if err := c.sync(context.Background(), "ns"); (err != nil) != tc.fail {
				t.Errorf("sync: %v, want failure %v", err, tc.fail)
			}
		})
	}
}

func TestRunRecreates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset(namespace("ns", corev1.NamespaceActive))
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts(), client)
	if err != nil {
		t.Fatal(err)
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
	exists := func() bool {
		_, err := client.CoreV1().ServiceAccounts("ns").Get(ctx, DefaultName, metav1.GetOptions{})
		return err == nil
	}
	waitFor("default service account", exists)
	waitFor("the informer to see it", func() bool {
		_, err := c.saLister.ServiceAccounts("ns").Get(DefaultName)
		return err == nil
	})
	if err := client.CoreV1().ServiceAccounts("ns").Delete(ctx, DefaultName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("recreated service account", func() bool { return len(creates(client)) == 2 && exists() })
}
