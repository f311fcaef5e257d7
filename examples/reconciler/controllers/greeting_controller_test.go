package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gcp-project/gcp/pkg/testserver"

	greetingsv1 "example.dev/reconciler/api/v1"
)

// timeout bounds every wait on the reconciler or on gcp's controllers; the
// work takes well under a second, the margin is for a loaded machine.
const timeout = time.Minute

// crdPaths are the example's CRDs, relative to this package's directory
// (go test runs a package's tests there).
var crdPaths = []string{"../config/crd"}

func init() {
	// controller-runtime logs through a global logger; without one it
	// complains that logs are dropped. go test shows them on failure.
	log.SetLogger(zap.New(zap.UseDevMode(true)))
}

// newScheme is a scheme with the built-in types and the Greeting types.
func newScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := greetingsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// startManager runs a controller-runtime manager with the greeting
// reconciler against s until t ends, and returns a client (not the
// manager's cached one) for the test to act with.
func startManager(t *testing.T, s *testserver.Server) client.Client {
	t.Helper()
	scheme := newScheme(t)
	mgr, err := ctrl.NewManager(s.AdminConfig, ctrl.Options{
		Scheme: scheme,
		// No ports: tests run in parallel, each with its own manager.
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// controller-runtime refuses a second controller of the same name
		// in one process; parallel tests each register "greeting".
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&GreetingReconciler{Client: mgr.GetClient(), Scheme: scheme}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	// Registered after testserver.Start's cleanup, so it runs first: the
	// manager stops before the server does.
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})

	c, err := client.New(s.AdminConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eventually polls cond until it holds, failing t after timeout with the
// last error cond returned.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s (last: %v)", timeout, what, last)
	}
}

// createGreeting creates Greeting default/name for who.
func createGreeting(t *testing.T, c client.Client, name, who string) *greetingsv1.Greeting {
	t.Helper()
	g := &greetingsv1.Greeting{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       greetingsv1.GreetingSpec{Name: who},
	}
	if err := c.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	return g
}

// waitReconciled waits until g has its status message and its ConfigMap,
// controlled by g, and returns the ConfigMap.
func waitReconciled(t *testing.T, c client.Client, g *greetingsv1.Greeting) *corev1.ConfigMap {
	t.Helper()
	want := Message(g.Spec.Name)
	eventually(t, "the status message", func(ctx context.Context) (bool, error) {
		var got greetingsv1.Greeting
		if err := c.Get(ctx, client.ObjectKeyFromObject(g), &got); err != nil {
			return false, err
		}
		return got.Status.Message == want, fmt.Errorf("status.message %q", got.Status.Message)
	})

	cm := &corev1.ConfigMap{}
	eventually(t, "the ConfigMap", func(ctx context.Context) (bool, error) {
		key := client.ObjectKey{Namespace: g.Namespace, Name: ConfigMapName(g.Name)}
		if err := c.Get(ctx, key, cm); err != nil {
			return false, err
		}
		if cm.Data[MessageKey] != want {
			return false, fmt.Errorf("data %v", cm.Data)
		}
		owner := metav1.GetControllerOf(cm)
		if owner == nil || owner.UID != g.UID || owner.Kind != "Greeting" || owner.APIVersion != greetingsv1.GroupVersion.String() {
			return false, fmt.Errorf("controller reference %+v", owner)
		}
		return true, nil
	})
	return cm
}

// TestGreetingReconciler: the reconciler answers a Greeting with its status
// message and a ConfigMap that the Greeting controls. The server runs no
// controllers of its own, as envtest's kube-apiserver.
func TestGreetingReconciler(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{CRDPaths: crdPaths})
	c := startManager(t, s)

	g := createGreeting(t, c, "world", "World")
	cm := waitReconciled(t, c, g)
	if got := cm.Data[MessageKey]; got != "Hello, World!" {
		t.Errorf("ConfigMap message %q, want %q", got, "Hello, World!")
	}
}

// TestGreetingGarbageCollected: with gcp's own controllers running (the
// garbage collector among them), deleting a Greeting deletes the ConfigMap
// it owns. envtest runs no garbage collector, so there the ConfigMap
// would stay.
func TestGreetingGarbageCollected(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{CRDPaths: crdPaths, Controllers: []string{"*"}})
	c := startManager(t, s)

	g := createGreeting(t, c, "gc", "Garbage Collector")
	cm := waitReconciled(t, c, g)

	if err := c.Delete(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap to be garbage-collected", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			err = errors.New("still there")
		}
		return false, err
	})
}
