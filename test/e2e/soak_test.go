package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// TestSoak runs a bounded mixed load against `gcp start`, with its
// controllers, and samples the process's RSS, goroutines and heap in use.
// GCP_SOAK sets how long (hack/soak.sh runs 30m); CI runs 15 s, which
// checks that the load runs without server errors and that sampling works.
// From 10 minutes on, the test also fails unless memory and goroutines
// stay flat: the median of the last tenth of the run against the median
// of the tenth after the first fifth (the warm-up).
// GCP_SOAK_REPORT names a CSV file for the samples.
func TestSoak(t *testing.T) {
	t.Parallel()
	duration, every := 15*time.Second, 1*time.Second
	if v := os.Getenv("GCP_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("GCP_SOAK=%q: %v", v, err)
		}
		duration, every = d, max(time.Second, d/180)
	}
	a := startAllInOne(t, t.TempDir())
	cfg, err := clientcmd.BuildConfigFromFlags("", a.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = -1, 0, 30*time.Second
	l := &soakLoad{t: t, cfg: cfg, client: kubernetes.NewForConfigOrDie(cfg)}

	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { l.configMaps(ctx, fmt.Sprintf("soak-%d", i)) })
	}
	wg.Go(func() { l.namespaces(ctx) })
	wg.Go(func() { l.watches(ctx) })
	wg.Go(func() { l.lease(ctx) })
	wg.Go(func() { l.tokens(ctx) })
	wg.Go(func() { l.customResources(ctx) })

	var samples []soakSample
	start := time.Now()
	for ctx.Err() == nil {
		s, err := sample(a, l.client, time.Since(start))
		if err != nil {
			t.Errorf("sample: %v", err)
		} else {
			samples = append(samples, s)
		}
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
	wg.Wait()

	t.Logf("%d operations, %d expected conflicts or not-founds, %d samples; %d namespaces and %d CRDs created and deleted, %d watches opened and closed",
		l.ops.Load(), l.expected.Load(), len(samples), l.namespaceRounds.Load(), l.crdRounds.Load(), l.watchRounds.Load())
	if path := os.Getenv("GCP_SOAK_REPORT"); path != "" {
		writeSoakCSV(t, path, samples)
	}
	if len(samples) < 3 {
		t.Fatalf("only %d samples", len(samples))
	}
	for _, s := range samples {
		if s.rss == 0 || s.goroutines == 0 || s.heap == 0 {
			t.Fatalf("empty sample: %+v", s)
		}
	}
	if l.ops.Load() == 0 {
		t.Fatal("no operations")
	}
	warm := window(samples, 0.2, 0.3)
	last := window(samples, 0.9, 1.0)
	t.Logf("after warm-up → last tenth (medians): RSS %.0f → %.0f MiB, heap in use %.0f → %.0f MiB, goroutines %d → %d",
		mib(warm.rss), mib(last.rss), mib(warm.heap), mib(last.heap), warm.goroutines, last.goroutines)
	if duration >= 10*time.Minute {
		if float64(last.rss) > 1.15*float64(warm.rss) {
			t.Errorf("RSS grew from %.0f to %.0f MiB", mib(warm.rss), mib(last.rss))
		}
		if float64(last.heap) > 1.25*float64(warm.heap) {
			t.Errorf("heap in use grew from %.0f to %.0f MiB", mib(warm.heap), mib(last.heap))
		}
		if float64(last.goroutines) > 1.1*float64(warm.goroutines)+10 {
			t.Errorf("goroutines grew from %d to %d", warm.goroutines, last.goroutines)
		}
	}
}

// soakLoad is the soak's load: a few workers, each pausing between
// requests and reusing a fixed set of names, so the stored data stays
// bounded however long it runs.
type soakLoad struct {
	t        *testing.T
	cfg      *rest.Config
	client   kubernetes.Interface
	ops      atomic.Int64 // requests answered without an unexpected error
	expected atomic.Int64 // conflicts and not-founds that concurrency explains

	namespaceRounds, crdRounds, watchRounds atomic.Int64 // create-to-gone cycles, and watches opened and closed
}

// soakPause is the pause between one worker's requests.
const soakPause = 20 * time.Millisecond

// check counts a request's outcome: nil or an error that ok allows is
// fine; anything else fails the test, unless the soak is ending.
func (l *soakLoad) check(ctx context.Context, what string, err error, ok ...func(error) bool) {
	switch {
	case err == nil:
		l.ops.Add(1)
	case ctx.Err() != nil:
	case slices.ContainsFunc(ok, func(f func(error) bool) bool { return f(err) }):
		l.expected.Add(1)
	default:
		l.t.Errorf("%s: %v", what, err)
	}
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// configMaps creates, reads, updates (with the resourceVersion read),
// lists and deletes 200 ConfigMaps in ns round and round.
func (l *soakLoad) configMaps(ctx context.Context, ns string) {
	_, err := l.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	l.check(ctx, "create namespace "+ns, err)
	cms := l.client.CoreV1().ConfigMaps(ns)
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("cm-%d", i%200)
		switch (i / 200) % 3 {
		case 0:
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": strconv.Itoa(i), "pad": strings.Repeat("x", 512)}}, metav1.CreateOptions{})
			l.check(ctx, "create configmap", err, apierrors.IsAlreadyExists)
		case 1:
			cm, err := cms.Get(ctx, name, metav1.GetOptions{})
			l.check(ctx, "get configmap", err, apierrors.IsNotFound)
			if err == nil {
				cm.Data["i"] = strconv.Itoa(i)
				_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
				l.check(ctx, "update configmap", err)
			}
		default:
			err := cms.Delete(ctx, name, metav1.DeleteOptions{})
			l.check(ctx, "delete configmap", err, apierrors.IsNotFound)
		}
		if i%50 == 0 {
			_, err := cms.List(ctx, metav1.ListOptions{})
			l.check(ctx, "list configmaps", err)
			_, err = cms.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			l.check(ctx, "list configmaps from the cache", err)
		}
		pause(ctx, soakPause)
	}
}

// namespaces creates a namespace, fills it, deletes it and waits until
// the namespace controller has emptied and removed it, round and round
// over three names; the service account and root CA publisher
// controllers fill each new namespace too.
func (l *soakLoad) namespaces(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		ns := fmt.Sprintf("churn-%d", i%3)
		_, err := l.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		l.check(ctx, "create namespace "+ns, err, apierrors.IsAlreadyExists)
		for j := range 5 {
			_, err := l.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%d", j)}}, metav1.CreateOptions{})
			l.check(ctx, "create configmap in "+ns, err, apierrors.IsAlreadyExists, apierrors.IsForbidden) // forbidden: still terminating
			_, err = l.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", j)}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			l.check(ctx, "create secret in "+ns, err, apierrors.IsAlreadyExists, apierrors.IsForbidden)
		}
		err = l.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		l.check(ctx, "delete namespace "+ns, err, apierrors.IsNotFound)
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := l.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		l.check(ctx, "namespace "+ns+" gone", err)
		l.namespaceRounds.Add(1)
		pause(ctx, soakPause)
	}
}

// watches opens a watch on every ConfigMap from the current list,
// reads it for two seconds and closes it, round and round.
func (l *soakLoad) watches(ctx context.Context) {
	for ctx.Err() == nil {
		list, err := l.client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1})
		l.check(ctx, "list for watch", err)
		if err != nil {
			pause(ctx, time.Second)
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		w, err := l.client.CoreV1().ConfigMaps("").Watch(wctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
		l.check(ctx, "watch", err)
		if err == nil {
			for range w.ResultChan() {
			}
			w.Stop()
			l.watchRounds.Add(1)
		}
		cancel()
	}
}

// lease renews a Lease every second, as a leader-elected client does.
func (l *soakLoad) lease(ctx context.Context) {
	leases := l.client.CoordinationV1().Leases("default")
	holder := "soak"
	lease, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "soak"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
	l.check(ctx, "create lease", err)
	for err == nil && ctx.Err() == nil {
		pause(ctx, time.Second)
		now := metav1.NowMicro()
		lease.Spec.RenewTime = &now
		lease, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		l.check(ctx, "renew lease", err)
	}
}

// tokens requests a token for the default ServiceAccount and has it
// reviewed, twice a second.
func (l *soakLoad) tokens(ctx context.Context) {
	for ctx.Err() == nil {
		tr, err := l.client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
		l.check(ctx, "token request", err, apierrors.IsNotFound) // the controller may not have made it yet
		if err == nil {
			review, err := l.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
			l.check(ctx, "token review", err)
			if err == nil && !review.Status.Authenticated {
				l.t.Errorf("a fresh token is not authenticated: %+v", review.Status)
			}
		}
		pause(ctx, 500*time.Millisecond)
	}
}

// customResources creates a CRD, waits until it is served, creates and
// lists a few custom resources, deletes the CRD and waits until it is
// gone, round and round over two names: the apiextensions server sets
// up and tears down a handler and storage each time.
func (l *soakLoad) customResources(ctx context.Context) {
	crds := apiextensionsclient.NewForConfigOrDie(l.cfg).ApiextensionsV1().CustomResourceDefinitions()
	dyn := dynamic.NewForConfigOrDie(l.cfg)
	for i := 0; ctx.Err() == nil; i++ {
		plural := fmt.Sprintf("soaks%d", i%2)
		name := plural + ".soak.e2e.gcp.dev"
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "soak.e2e.gcp.dev",
				Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: fmt.Sprintf("Soak%d", i%2)},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type:       "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)}},
					}},
				}},
			},
		}
		_, err := crds.Create(ctx, crd, metav1.CreateOptions{})
		l.check(ctx, "create crd", err, apierrors.IsAlreadyExists)
		gvr := schema.GroupVersionResource{Group: "soak.e2e.gcp.dev", Version: "v1", Resource: plural}
		crs := dyn.Resource(gvr).Namespace("default")
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := crs.List(ctx, metav1.ListOptions{})
			return err == nil, nil
		})
		l.check(ctx, "crd "+name+" served", err)
		for j := range 5 {
			cr := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "soak.e2e.gcp.dev/v1", "kind": crd.Spec.Names.Kind,
				"metadata": map[string]any{"name": fmt.Sprintf("cr-%d", j)},
				"spec":     map[string]any{"j": int64(j)},
			}}
			_, err := crs.Create(ctx, cr, metav1.CreateOptions{})
			l.check(ctx, "create custom resource", err, apierrors.IsAlreadyExists)
		}
		err = crds.Delete(ctx, name, metav1.DeleteOptions{})
		l.check(ctx, "delete crd", err, apierrors.IsNotFound)
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		l.check(ctx, "crd "+name+" gone", err)
		l.crdRounds.Add(1)
		pause(ctx, time.Second)
	}
}

// soakSample is one sample of the server process.
type soakSample struct {
	at         time.Duration
	rss, heap  uint64 // bytes
	goroutines int
}

// sample reads the process's RSS from /proc and its goroutines and heap
// in use from /metrics.
func sample(a *allInOne, client kubernetes.Interface, at time.Duration) (soakSample, error) {
	s := soakSample{at: at}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.cmd.Process.Pid))
	if err != nil {
		return s, err
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return s, fmt.Errorf("VmRSS %q: %v", rest, err)
			}
			s.rss = kb << 10
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	metrics, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return s, err
	}
	for line := range strings.Lines(string(metrics)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		switch name {
		case "go_goroutines":
			s.goroutines = int(f)
		case "go_memstats_heap_inuse_bytes":
			s.heap = uint64(f)
		default:
			continue
		}
		if err != nil {
			return s, fmt.Errorf("%s %q: %v", name, value, err)
		}
	}
	if s.goroutines == 0 || s.heap == 0 {
		return s, errors.New("/metrics has no go_goroutines or go_memstats_heap_inuse_bytes")
	}
	return s, nil
}

// window returns the per-field medians of the samples between the
// fractions from and to of the run.
func window(samples []soakSample, from, to float64) soakSample {
	end := samples[len(samples)-1].at
	var rss, heap []uint64
	var gs []int
	for _, s := range samples {
		if f := float64(s.at) / float64(end); f >= from && f <= to {
			rss, heap, gs = append(rss, s.rss), append(heap, s.heap), append(gs, s.goroutines)
		}
	}
	if len(rss) == 0 {
		return soakSample{}
	}
	slices.Sort(rss)
	slices.Sort(heap)
	slices.Sort(gs)
	return soakSample{rss: rss[len(rss)/2], heap: heap[len(heap)/2], goroutines: gs[len(gs)/2]}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func writeSoakCSV(t *testing.T, path string, samples []soakSample) {
	var b strings.Builder
	b.WriteString("seconds,rss_mib,heap_inuse_mib,goroutines\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%.0f,%.1f,%.1f,%d\n", s.at.Seconds(), mib(s.rss), mib(s.heap), s.goroutines)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
