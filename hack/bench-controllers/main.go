// Command bench-controllers measures how fast the controllers behind an API
// server clean up: the namespace controller deleting a namespace full of
// configmaps and custom resources, and the garbage collector deleting the
// dependents of a deleted owner. It only talks to the API server named by
// --kubeconfig, so the same figures can be taken against gcp and against
// upstream kube-apiserver + kube-controller-manager.
//
//	go run ./hack/bench-controllers --kubeconfig .gcp/admin.kubeconfig --objects 1000 --runs 3
//
// Each measurement fills its objects untimed with a few concurrent clients,
// waits a short settle time so the controllers' informers have caught up,
// then times one request and polls every 100 ms until its effect is
// complete. Times include the namespace controller's grace period (5 s in
// gcp and upstream) after a namespace is deleted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	group       = "bench.gcp.example"
	crdName     = "widgets." + group
	workers     = 8                      // concurrent clients filling a namespace
	pollEvery   = 100 * time.Millisecond // poll interval of every wait
	waitTimeout = 10 * time.Minute       // hard limit of one measurement
	settle      = 2 * time.Second        // pause between filling and timing
	benchLabel  = "bench.gcp.example/run"
)

var (
	widgets    = schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	configmaps = corev1.SchemeGroupVersion.WithResource("configmaps")
)

// bench holds the clients and what to clean up at the end.
type bench struct {
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	ext        apiextensions.Interface
	n          int
	namespaces []string
	seq        int
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server to measure")
	objects := flag.Int("objects", 1000, "objects of each kind per measurement")
	runs := flag.Int("runs", 3, "repetitions of each measurement")
	flag.Parse()
	if err := run(*kubeconfig, *objects, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench-controllers:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, objects, runs int) error {
	if kubeconfig == "" || objects < 1 || runs < 1 {
		return errors.New("--kubeconfig is required, --objects and --runs must be positive")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS = -1 // no client-side rate limit
	b := &bench{n: objects}
	if b.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if b.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	if b.ext, err = apiextensions.NewForConfig(cfg); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer b.cleanup()

	if err := b.createCRD(ctx); err != nil {
		return fmt.Errorf("CRD %s: %w", crdName, err)
	}
	gcNS, err := b.namespace(ctx, "bench-gc-")
	if err != nil {
		return err
	}
	measurements := []struct {
		name string
		fn   func(context.Context) (time.Duration, error)
	}{
		{fmt.Sprintf("namespace delete (%d cm + %d CR)", objects, objects), b.namespaceDeletion},
		{"  baseline: client deletecollection", b.clientDeletion},
		{fmt.Sprintf("GC background (%d dependents)", objects), func(ctx context.Context) (time.Duration, error) {
			return b.garbageCollection(ctx, gcNS, metav1.DeletePropagationBackground)
		}},
		{fmt.Sprintf("GC foreground (%d dependents)", objects), func(ctx context.Context) (time.Duration, error) {
			return b.garbageCollection(ctx, gcNS, metav1.DeletePropagationForeground)
		}},
	}
	results := make([][]time.Duration, len(measurements))
	for r := range runs {
		for i, m := range measurements {
			d, err := m.fn(ctx)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", strings.TrimSpace(m.name), r+1, err)
			}
			fmt.Fprintf(os.Stderr, "run %d: %s: %v\n", r+1, strings.TrimSpace(m.name), d.Round(time.Millisecond))
			results[i] = append(results[i], d)
		}
	}

	fmt.Printf("server: %s\n", cfg.Host)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "measurement\tmin\tmedian\truns")
	for i, m := range measurements {
		ds := results[i]
		all := make([]string, len(ds))
		for j, d := range ds {
			all[j] = seconds(d)
		}
		slices.Sort(ds)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.name, seconds(ds[0]), seconds(median(ds)), strings.Join(all, " "))
	}
	return w.Flush()
}

// namespaceDeletion times deleting a filled namespace until GET says NotFound.
func (b *bench) namespaceDeletion(ctx context.Context) (time.Duration, error) {
	ns, err := b.filledNamespace(ctx, "bench-ns-")
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := b.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return 0, err
	}
	err = b.waitNamespaceGone(ctx, ns)
	return time.Since(start), err
}

// clientDeletion is the baseline of namespaceDeletion: the client deletes
// the same content with deletecollection and waits until both lists are
// empty. The namespace itself is then deleted, untimed.
func (b *bench) clientDeletion(ctx context.Context) (time.Duration, error) {
	ns, err := b.filledNamespace(ctx, "bench-base-")
	if err != nil {
		return 0, err
	}
	// The label leaves out kube-root-ca.crt, which its publisher recreates.
	sel := metav1.ListOptions{LabelSelector: benchLabel}
	start := time.Now()
	for _, gvr := range []schema.GroupVersionResource{configmaps, widgets} {
		if err := b.dyn.Resource(gvr).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
			return 0, fmt.Errorf("deletecollection %s: %w", gvr.Resource, err)
		}
	}
	err = poll(ctx, "configmaps and widgets in "+ns+" to be gone", func() (bool, error) {
		for _, gvr := range []schema.GroupVersionResource{configmaps, widgets} {
			if n, err := b.count(ctx, gvr, ns, benchLabel); n > 0 || err != nil {
				return false, err
			}
		}
		return true, nil
	})
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if err := b.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return 0, err
	}
	return d, b.waitNamespaceGone(ctx, ns)
}

// garbageCollection creates an owner configmap and b.n dependents in ns,
// deletes the owner with the given propagation and times until the
// dependents are gone (background) or the owner is gone (foreground,
// which waits for the dependents as they block owner deletion).
func (b *bench) garbageCollection(ctx context.Context, ns string, propagation metav1.DeletionPropagation) (time.Duration, error) {
	b.seq++
	run := fmt.Sprintf("gc-%d", b.seq)
	cms := b.kube.CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: run + "-owner"}}, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptrTo(true)}
	err = parallel(b.n, func(i int) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("%s-dep-%05d", run, i),
			Labels:          map[string]string{benchLabel: run},
			OwnerReferences: []metav1.OwnerReference{ref},
		}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, err
	}
	if err := sleep(ctx, settle); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &propagation}); err != nil {
		return 0, err
	}
	if propagation == metav1.DeletePropagationForeground {
		err = poll(ctx, "owner "+ns+"/"+owner.Name+" to be gone", func() (bool, error) {
			_, err := cms.Get(ctx, owner.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	} else {
		err = poll(ctx, fmt.Sprintf("%d dependents in %s to be gone", b.n, ns), func() (bool, error) {
			n, err := b.count(ctx, configmaps, ns, benchLabel+"="+run)
			return n == 0, err
		})
	}
	d := time.Since(start)
	if err == nil && propagation == metav1.DeletePropagationForeground {
		if n, cerr := b.count(ctx, configmaps, ns, benchLabel+"="+run); cerr != nil || n > 0 {
			err = fmt.Errorf("owner gone but dependents remain (%d, %v)", n, cerr)
		}
	}
	return d, err
}

// parallel calls fn(0..n-1) from a fixed number of goroutines and returns
// the first error.
func parallel(n int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// poll calls done every pollEvery until it returns true or an error, or
// waitTimeout passes.
func poll(parent context.Context, what string, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(parent, waitTimeout)
	defer cancel()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		ok, err := done()
		switch {
		case ok:
			return nil
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			if parent.Err() == nil {
				return fmt.Errorf("timed out after %v waiting for %s", waitTimeout, what)
			}
			return fmt.Errorf("waiting for %s: %w", what, parent.Err())
		case <-t.C:
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func median(sorted []time.Duration) time.Duration {
	m := len(sorted) / 2
	if len(sorted)%2 == 0 {
		return (sorted[m-1] + sorted[m]) / 2
	}
	return sorted[m]
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func ptrTo[T any](v T) *T { return &v }
