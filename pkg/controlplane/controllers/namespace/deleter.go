package namespace

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// finalizerWaitSeconds is how long, by default, content held by
// finalizers is expected to take to go away.
const finalizerWaitSeconds = 15

// listPageSize is the page size of the controller's lists, so that a
// namespace with many objects is read in chunks.
const listPageSize = 500

// namespaceClient is the part of the namespaces client the deleter uses.
type namespaceClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Namespace, error)
	UpdateStatus(ctx context.Context, ns *corev1.Namespace, opts metav1.UpdateOptions) (*corev1.Namespace, error)
	Finalize(ctx context.Context, ns *corev1.Namespace, opts metav1.UpdateOptions) (*corev1.Namespace, error)
}

// remainingError says the namespace is not empty yet but its content is
// going away (it waits on finalizers); estimate is in seconds.
type remainingError struct {
	estimate int64
}

func (e *remainingError) Error() string {
	return fmt.Sprintf("some content remains in the namespace, estimate %d seconds before it is removed", e.estimate)
}

// verb is a collection verb that a resource may not support.
type verb string

const (
	verbList             verb = "list"
	verbDelete           verb = "delete"
	verbDeleteCollection verb = "deletecollection"
)

// resource is a namespaced resource to empty, with the verbs it supports.
type resource struct {
	gvr   schema.GroupVersionResource
	verbs map[verb]bool
}

// deleter empties namespaces and removes its finalizer from them. It
// trusts the verbs discovery lists for each resource; a resource that
// answers 405 or 404 to a collection verb anyway is skipped for that verb
// in that pass.
type deleter struct {
	namespaces namespaceClient
	metadata   metadata.Interface
	discover   func() ([]*metav1.APIResourceList, error)
	finalizer  corev1.FinalizerName
	// explain says why a group version's discovery failed; may be nil.
	explain func(schema.GroupVersion) string
}

func newDeleter(namespaces namespaceClient, metadataClient metadata.Interface, discover func() ([]*metav1.APIResourceList, error), finalizer corev1.FinalizerName) *deleter {
	return &deleter{namespaces: namespaces, metadata: metadataClient, discover: discover, finalizer: finalizer}
}

// delete empties the namespace name if it is being deleted: it marks it
// Terminating, deletes its content and, when none is left, removes the
// deleter's finalizer. It returns a *remainingError when content is
// still going away, and an error when something failed; the caller
// retries either way.
func (d *deleter) delete(ctx context.Context, name string) error {
	ns, err := d.namespaces.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp.IsZero() {
		return nil
	}
	klog.FromContext(ctx).V(5).Info("Emptying namespace", "namespace", name, "finalizer", d.finalizer)

	ns, err = d.update(ctx, ns, func(ns *corev1.Namespace) (*corev1.Namespace, error) {
		if ns.DeletionTimestamp.IsZero() || ns.Status.Phase == corev1.NamespaceTerminating {
			return ns, nil
		}
		ns = ns.DeepCopy()
		ns.Status.Phase = corev1.NamespaceTerminating
		return d.namespaces.UpdateStatus(ctx, ns, metav1.UpdateOptions{})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp.IsZero() || len(ns.Spec.Finalizers) == 0 {
		return nil
	}

	estimate, err := d.deleteAllContent(ctx, ns)
	if err != nil {
		return err
	}
	if estimate > 0 {
		return &remainingError{estimate: estimate}
	}

	_, err = d.update(ctx, ns, func(ns *corev1.Namespace) (*corev1.Namespace, error) { return d.finalize(ctx, ns) })
	if apierrors.IsNotFound(err) {
		// Another controller with the same finalizer finished first.
		return nil
	}
	return err
}

// update applies fn to ns, and on a conflict to the namespace read again
// (as long as it is the same namespace, by UID).
func (d *deleter) update(ctx context.Context, ns *corev1.Namespace, fn func(*corev1.Namespace) (*corev1.Namespace, error)) (*corev1.Namespace, error) {
	current := ns
	var result *corev1.Namespace
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if current == nil {
			latest, err := d.namespaces.Get(ctx, ns.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if latest.UID != ns.UID {
				return fmt.Errorf("namespace %s was replaced (uid %s, was %s)", ns.Name, latest.UID, ns.UID)
			}
			current = latest
		}
		var err error
		result, err = fn(current)
		current = nil
		return err
	})
	return result, err
}

// finalize removes the deleter's finalizer from the namespace's spec.
func (d *deleter) finalize(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	if !slices.Contains(ns.Spec.Finalizers, d.finalizer) {
		return ns, nil
	}
	finalized := &corev1.Namespace{ObjectMeta: ns.ObjectMeta, Spec: ns.Spec}
	finalized.Spec.Finalizers = slices.DeleteFunc(slices.Clone(ns.Spec.Finalizers), func(f corev1.FinalizerName) bool { return f == d.finalizer })
	return d.namespaces.Finalize(ctx, finalized, metav1.UpdateOptions{})
}

// resources returns the namespaced resources discovery lists that can be
// deleted, sorted; a discovery error or unparsable group versions are
// reported to conds and returned, with what was found nonetheless.
func (d *deleter) resources(conds *conditions) ([]resource, []error) {
	var errs []error
	lists, err := d.discover()
	if err != nil {
		// Some groups may have failed; go on with the others.
		errs = append(errs, err)
		conds.discoveryFailed(err, d.explain)
	}
	var out []resource
	var parseErrs []error
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			parseErrs = append(parseErrs, err)
			continue
		}
		for _, r := range list.APIResources {
			verbs := map[verb]bool{}
			for _, v := range r.Verbs {
				verbs[verb(v)] = true
			}
			if !verbs[verbDelete] && !verbs[verbDeleteCollection] {
				continue
			}
			out = append(out, resource{gvr: gv.WithResource(r.Name), verbs: verbs})
		}
	}
	if len(parseErrs) > 0 {
		err := utilerrors.NewAggregate(parseErrs)
		errs = append(errs, err)
		conds.groupVersionParsingFailed(err)
	}
	slices.SortFunc(out, func(a, b resource) int {
		if c := cmp.Compare(a.gvr.Group, b.gvr.Group); c != 0 {
			return c
		}
		if c := cmp.Compare(a.gvr.Resource, b.gvr.Resource); c != 0 {
			return c
		}
		return cmp.Compare(a.gvr.Version, b.gvr.Version)
	})
	return out, errs
}

// deleteAllContent deletes everything in the namespace and updates its
// conditions. It returns how many seconds the content still there is
// expected to take to go away (0: none left, or it should have gone).
func (d *deleter) deleteAllContent(ctx context.Context, ns *corev1.Namespace) (int64, error) {
	logger := klog.FromContext(ctx)
	conds := &conditions{}
	resources, errs := d.resources(conds)

	var estimate int64
	remaining := contentTotals{resources: map[schema.GroupVersionResource]int{}, finalizers: map[string]int{}}
	for _, r := range resources {
		left, err := d.deleteResource(ctx, r, ns.Name)
		if err != nil {
			// Go on with the other resources.
			errs = append(errs, err)
			conds.deleteContentFailed(err)
		}
		estimate = max(estimate, left.estimate)
		if left.count > 0 {
			remaining.resources[r.gvr] = left.count
			for f, n := range left.finalizers {
				remaining.finalizers[f] += n
			}
		}
	}
	conds.contentRemaining(remaining)

	// Always write the conditions when they changed: a failure of an
	// earlier pass is reported as fixed as soon as it is.
	if err := d.updateConditions(ctx, ns, conds); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Couldn't update the status conditions of namespace", "namespace", ns.Name)
	}
	err := utilerrors.NewAggregate(errs)
	logger.V(4).Info("Deleted namespace content", "namespace", ns.Name, "estimate", estimate, "err", err)
	return estimate, err
}

// updateConditions writes the conditions to the namespace's status if
// they changed, retrying on conflicts with the latest namespace.
func (d *deleter) updateConditions(ctx context.Context, ns *corev1.Namespace, conds *conditions) error {
	_, err := d.update(ctx, ns, func(ns *corev1.Namespace) (*corev1.Namespace, error) {
		ns = ns.DeepCopy()
		if !conds.apply(&ns.Status) {
			return ns, nil
		}
		return d.namespaces.UpdateStatus(ctx, ns, metav1.UpdateOptions{})
	})
	return err
}

// leftover is what remains of one resource after deleting it.
type leftover struct {
	// estimate is the seconds the rest is expected to take to go away;
	// 0 does not mean that nothing is left.
	estimate int64
	// count is how many objects remain.
	count int
	// finalizers counts the remaining objects by finalizer.
	finalizers map[string]int
}

// deleteResource deletes every object of r in namespace, with one
// deletecollection when r supports it and with a delete for each object
// otherwise, then lists what remains.
func (d *deleter) deleteResource(ctx context.Context, r resource, namespace string) (leftover, error) {
	logger := klog.FromContext(ctx)
	logger.V(5).Info("Deleting namespace content", "namespace", namespace, "resource", r.gvr)

	done, err := d.deleteCollection(ctx, r, namespace)
	if err != nil {
		return leftover{}, err
	}
	if !done {
		if err := d.deleteEach(ctx, r, namespace); err != nil {
			return leftover{}, err
		}
	}

	items, listed, err := d.list(ctx, r, namespace)
	if err != nil || !listed {
		return leftover{}, err
	}
	if len(items) == 0 {
		return leftover{}, nil
	}
	left := leftover{count: len(items), finalizers: map[string]int{}}
	for _, item := range items {
		for _, f := range item.Finalizers {
			left.finalizers[f]++
		}
	}
	logger.V(5).Info("Namespace content remaining", "namespace", namespace, "resource", r.gvr, "count", left.count, "finalizers", left.finalizers)
	if len(left.finalizers) > 0 {
		// Finalizers are expected to take time (the garbage collector,
		// other controllers); wait for them.
		left.estimate = finalizerWaitSeconds
		return left, nil
	}
	// Nothing holds them: they were created meanwhile, or their
	// deletion failed quietly.
	return left, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", namespace, r.gvr)
}

// deleteCollection deletes all of r in namespace with one request. It
// returns false when r does not support it.
func (d *deleter) deleteCollection(ctx context.Context, r resource, namespace string) (bool, error) {
	if !r.verbs[verbDeleteCollection] {
		return false, nil
	}
	// Background propagation: the garbage collector must not add the
	// orphan finalizer to what the namespace controller deletes.
	err := d.metadata.Resource(r.gvr).Namespace(namespace).DeleteCollection(ctx, deleteOptions(), metav1.ListOptions{})
	if err == nil {
		return true, nil
	}
	// A resource may answer either although discovery lists the verb;
	// and a custom resource may have just gone away.
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		return false, nil
	}
	return true, err
}

// deleteEach lists r in namespace and deletes each object.
func (d *deleter) deleteEach(ctx context.Context, r resource, namespace string) error {
	if !r.verbs[verbDelete] {
		return nil
	}
	items, listed, err := d.list(ctx, r, namespace)
	if err != nil || !listed {
		return err
	}
	client := d.metadata.Resource(r.gvr).Namespace(namespace)
	for _, item := range items {
		if !item.DeletionTimestamp.IsZero() && len(item.Finalizers) > 0 {
			// Already being deleted; it waits on its finalizers.
			continue
		}
		err := client.Delete(ctx, item.Name, deleteOptions())
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			return err
		}
	}
	return nil
}

// list returns the metadata of all of r in namespace, a page at a time;
// false when r cannot be listed.
func (d *deleter) list(ctx context.Context, r resource, namespace string) ([]metav1.PartialObjectMetadata, bool, error) {
	if !r.verbs[verbList] {
		return nil, false, nil
	}
	client := d.metadata.Resource(r.gvr).Namespace(namespace)
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.List(ctx, opts)
	})
	p.PageSize = listPageSize
	var items []metav1.PartialObjectMetadata
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		item, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return fmt.Errorf("listing %v: unexpected item %T", r.gvr, obj)
		}
		items = append(items, *item)
		return nil
	})
	if err == nil {
		return items, true, nil
	}
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return nil, true, err
}

func deleteOptions() metav1.DeleteOptions {
	background := metav1.DeletePropagationBackground
	return metav1.DeleteOptions{PropagationPolicy: &background}
}
