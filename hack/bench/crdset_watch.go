package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
		if _, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{}); err != nil {
			return 0, 0, fmt.Errorf("list %s: %w", gvr, err)
		}
	}
	log("listed the %d resources in %v", len(picked), time.Since(t0).Round(time.Millisecond))
	return accepted, len(picked), nil
}

// restart stops s, starts it on dir again and returns how long from the
// start until /readyz answered 200 and every CRD's resource of crds
// answered a list, polled over and over.
func restart(s stack, dir string, crds []*apiextensionsv1.CustomResourceDefinition) (time.Duration, error) {
	s.stop()
	t0 := time.Now()
	ready, err := s.start(dir)
	if err != nil {
		return 0, err
	}
	dyn := dynamic.NewForConfigOrDie(s.config())
	pending := make([]schema.GroupVersionResource, len(crds))
	for i, crd := range crds {
		pending[i] = storageGVR(crd)
	}
	rounds := 0
	for len(pending) > 0 {
		rounds++
		failed := make([]bool, len(pending))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i, gvr := range pending {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				_, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
				failed[i] = err != nil
			})
		}
		wg.Wait()
		var still []schema.GroupVersionResource
		for i, gvr := range pending {
			if failed[i] {
				still = append(still, gvr)
			}
		}
		pending = still
		if time.Since(t0) > 15*time.Minute {
			return 0, fmt.Errorf("%d CRDs not served 15m after the restart, e.g. %s", len(pending), pending[0])
		}
		if len(pending) > 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	took := time.Since(t0)
	log("restarted: ready after %v, every CRD served after %v (%d rounds of lists)", ready.Round(time.Millisecond), took.Round(time.Millisecond), rounds)
	return took, nil
}
