package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
)

// watchEveryKind starts one metadata informer on the storage version of
// each CRD of crds, as a controller (a Crossplane provider) holding an
// informer on every kind does, and returns when all have synced, with
// the time that took and a function that stops them.
func watchEveryKind(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) (time.Duration, func(), error) {
	factory := metadatainformer.NewSharedInformerFactory(metadata.NewForConfigOrDie(cfg), 0)
	for _, crd := range crds {
		factory.ForResource(storageGVR(crd)).Informer()
	}
	stopCh := make(chan struct{})
	var once sync.Once
	stop := func() {
		once.Do(func() { close(stopCh) })
		factory.Shutdown()
	}
	t0 := time.Now()
	factory.Start(stopCh)
	timeout := time.AfterFunc(15*time.Minute, func() { once.Do(func() { close(stopCh) }) })
	defer timeout.Stop()
	synced := factory.WaitForCacheSync(stopCh)
	took := time.Since(t0)
	for gvr, ok := range synced {
		if !ok {
			stop()
			return 0, nil, fmt.Errorf("the informer of %s did not sync in 15m", gvr)
		}
	}
	return took, stop, nil
}

// objectsNamespace holds the objects of namespaced CRDs.
const objectsNamespace = "bench-crdset"

// createObjects creates one minimal object (minimalObject) of each of n
// CRDs spread over crds, then lists each of their resources, and returns
// how many objects the server accepted of how many sent.
func createObjects(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition, n int) (accepted, sent int, err error) {
	if err := ensureNamespace(kubernetes.NewForConfigOrDie(cfg), objectsNamespace); err != nil {
		return 0, 0, err
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	picked := spread(len(crds), n)
	rejected := 0
	t0 := time.Now()
	for _, i := range picked {
		crd := crds[i]
		ns := ""
		if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
			ns = objectsNamespace
		}
		obj := &unstructured.Unstructured{Object: minimalObject(crd, "bench-object", ns)}
		_, err := dyn.Resource(storageGVR(crd)).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
		switch {
		case err == nil:
			accepted++
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			if rejected++; rejected <= 3 {
				log("%s rejected: %v", crd.Name, err)
			}
		default:
			return 0, 0, fmt.Errorf("create a %s: %w", crd.Spec.Names.Kind, err)
		}
	}
	log("%d of %d objects accepted (%d rejected) in %v", accepted, len(picked), rejected, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	for _, i := range picked {
		gvr := storageGVR(crds[i])
		if _, err := dyn.Resource(gvr).List(context.Background(), kubectlList); err != nil {
			return 0, 0, fmt.Errorf("list %s: %w", gvr, err)
		}
	}
	log("listed the %d resources in %v", len(picked), time.Since(t0).Round(time.Millisecond))
	return accepted, len(picked), nil
}

// restart stops s, starts it on dir again and returns how long from the
// start until /readyz answered 200 and every CRD's resource of crds
// answered a list with 200. Once /readyz answers, each resource is
// listed at once, all together (as the informers of clients that were
// watching them relist after a restart), and again every 100 ms until
// it answers: listing them a few at a time would add up the first
// lists' costs (figure 5) instead of measuring when each is served.
func restart(s stack, dir string, crds []*apiextensionsv1.CustomResourceDefinition) (time.Duration, error) {
	s.stop()
	t0 := time.Now()
	ready, err := s.start(dir)
	if err != nil {
		return 0, err
	}
	dyn := dynamic.NewForConfigOrDie(s.config())
	served := make([]time.Duration, len(crds))
	errs := make([]error, len(crds))
	var wg sync.WaitGroup
	for i, crd := range crds {
		gvr := storageGVR(crd)
		wg.Go(func() {
			for {
				_, err := dyn.Resource(gvr).List(context.Background(), kubectlList)
				if err == nil {
					served[i] = time.Since(t0)
					return
				}
				if time.Since(t0) > 15*time.Minute {
					errs[i] = fmt.Errorf("%s not served 15m after the restart: %w", gvr, err)
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	slices.Sort(served)
	last := served[len(served)-1]
	log("restarted: ready after %v; each CRD served after %v (median), the last after %v", ready.Round(time.Millisecond),
		served[len(served)/2].Round(time.Millisecond), last.Round(time.Millisecond))
	return last, nil
}
