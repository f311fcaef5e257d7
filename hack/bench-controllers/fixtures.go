package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// filledNamespace creates a namespace with b.n labelled configmaps and
// b.n widgets, then waits the settle time.
func (b *bench) filledNamespace(ctx context.Context, prefix string) (string, error) {
	ns, err := b.namespace(ctx, prefix)
	if err != nil {
		return "", err
	}
	labels := map[string]string{benchLabel: ns}
	err = parallel(b.n, func(i int) error {
		name := fmt.Sprintf("o-%05d", i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: map[string]string{"key": strings.Repeat("v", 64)}}
		if _, err := b.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
		cr := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": widgets.GroupVersion().String(), "kind": "Widget",
			"metadata": map[string]any{"name": name, "labels": map[string]any{benchLabel: ns}},
			"spec":     map[string]any{"size": int64(i)},
		}}
		_, err := b.dyn.Resource(widgets).Namespace(ns).Create(ctx, cr, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("filling %s: %w", ns, err)
	}
	return ns, sleep(ctx, settle)
}

// namespace creates a namespace with a generated name and remembers it for cleanup.
func (b *bench) namespace(ctx context.Context, prefix string) (string, error) {
	ns, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	b.namespaces = append(b.namespaces, ns.Name)
	return ns.Name, nil
}

func (b *bench) waitNamespaceGone(ctx context.Context, ns string) error {
	return poll(ctx, "namespace "+ns+" to be gone", func() (bool, error) {
		_, err := b.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// count returns how many objects of gvr in ns match the selector, from
// one page of a list: only zero or not zero matters.
func (b *bench) count(ctx context.Context, gvr schema.GroupVersionResource, ns, selector string) (int, error) {
	l, err := b.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
	if err != nil {
		return 0, err
	}
	return len(l.Items), nil
}

// createCRD creates the namespaced widgets CRD and waits until it is
// Established and served in discovery.
func (b *bench) createCRD(ctx context.Context) error {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: crdName},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
					},
				}},
			}},
		},
	}
	crds := b.ext.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return poll(ctx, "CRD "+crdName+" to be established and discovered", func() (bool, error) {
		got, err := crds.Get(ctx, crdName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		established := slices.ContainsFunc(got.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		})
		if !established {
			return false, nil
		}
		list, err := b.kube.Discovery().ServerResourcesForGroupVersion(widgets.GroupVersion().String())
		if err != nil {
			return false, nil // not in discovery yet
		}
		return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "widgets" }), nil
	})
}

// cleanup deletes what the run created and waits until it is gone, with
// its own deadline so it also runs after an interrupt.
func (b *bench) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ns := range b.namespaces {
		if err := b.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(os.Stderr, "cleanup: namespace %s: %v\n", ns, err)
		}
	}
	crds := b.ext.ApiextensionsV1().CustomResourceDefinitions()
	if err := crds.Delete(ctx, crdName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "cleanup: CRD %s: %v\n", crdName, err)
	}
	// Wait, so that a server stopped right after does not cut its
	// finalizers short.
	err := poll(ctx, "namespaces and CRD to be gone", func() (bool, error) {
		for _, ns := range b.namespaces {
			if _, err := b.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		_, err := crds.Get(ctx, crdName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cleanup:", err)
	}
}
