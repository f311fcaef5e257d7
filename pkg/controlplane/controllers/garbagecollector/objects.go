package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"
)

// errNamespacedOwnerOfClusterScoped: a cluster-scoped object names a
// namespaced owner, which cannot exist. Like upstream, the collector
// leaves such a reference alone instead of retrying it forever.
var errNamespacedOwnerOfClusterScoped = errors.New("a cluster-scoped object cannot have a namespaced owner")

// mappingError says that an object's kind is not served, or not yet known
// to the REST mapper (a custom resource definition that is new or gone).
type mappingError struct {
	id  objectRef
	err error
}

func (e *mappingError) Error() string {
	return fmt.Sprintf("no resource for %s: %v", e.id, e.err)
}

// objects reads and changes objects through the metadata API, for every
// resource, custom ones too; it finds an object's resource and scope from
// its apiVersion and kind with a REST mapper.
type objects struct {
	client metadata.Interface
	mapper meta.RESTMapper
}

// locate returns the client for id's resource and id with its namespace
// cleared if the resource is cluster-scoped.
func (o *objects) locate(id objectRef) (metadata.ResourceInterface, objectRef, error) {
	gv, err := schema.ParseGroupVersion(id.APIVersion)
	if err != nil {
		return nil, id, &mappingError{id: id, err: err}
	}
	m, err := o.mapper.RESTMapping(gv.WithKind(id.Kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, id, &mappingError{id: id, err: err}
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		id.Namespace = ""
		return o.client.Resource(m.Resource), id, nil
	}
	if id.Namespace == "" {
		return nil, id, errNamespacedOwnerOfClusterScoped
	}
	return o.client.Resource(m.Resource).Namespace(id.Namespace), id, nil
}

// get reads the object named by id (by name: its uid may differ) and
// returns it with id, its namespace cleared if it is cluster-scoped.
func (o *objects) get(ctx context.Context, id objectRef) (*metav1.PartialObjectMetadata, objectRef, error) {
	client, id, err := o.locate(id)
	if err != nil {
		return nil, id, err
	}
	obj, err := client.Get(ctx, id.Name, metav1.GetOptions{})
	return obj, id, err
}

// delete deletes latest, the object at id as last read, with the given
// propagation, on condition that it is still the same object (uid) and
// unchanged (resourceVersion). If it changed but kept its owner
// references, it is deleted anyway: unrelated updates must not starve
// the collector.
func (o *objects) delete(ctx context.Context, id objectRef, latest *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation) error {
	client, id, err := o.locate(id)
	if err != nil {
		return err
	}
	uid, rv := latest.UID, latest.ResourceVersion
	opts := metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
		PropagationPolicy: &policy,
	}
	err = client.Delete(ctx, id.Name, opts)
	if !apierrors.IsConflict(err) {
		return err
	}
	now, getErr := client.Get(ctx, id.Name, metav1.GetOptions{})
	if getErr != nil || now.UID != uid || !equality.Semantic.DeepEqual(now.OwnerReferences, latest.OwnerReferences) {
		return err
	}
	opts.Preconditions.ResourceVersion = nil
	return client.Delete(ctx, id.Name, opts)
}

// updateMeta applies change to the live metadata of the object at id and
// writes its owner references and finalizers back with a JSON merge patch
// (which custom resources support, unlike strategic merge patch)
// conditioned on the resourceVersion read, so nothing written in between
// is lost; it retries on conflict. Nothing is written if change reports
// no change, or if the object is gone or replaced (another uid).
func (o *objects) updateMeta(ctx context.Context, id objectRef, change func(*metav1.ObjectMeta) bool) error {
	client, id, err := o.locate(id)
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		obj, err := client.Get(ctx, id.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if obj.UID != id.UID || !change(&obj.ObjectMeta) {
			return nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": obj.ResourceVersion,
			"ownerReferences": obj.OwnerReferences,
			"finalizers":      obj.Finalizers,
		}})
		if err != nil {
			return err
		}
		_, err = client.Patch(ctx, id.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// removeOwners is a change for updateMeta that drops the owner references
// to uids.
func removeOwners(uids ...types.UID) func(*metav1.ObjectMeta) bool {
	return func(m *metav1.ObjectMeta) bool {
		n := len(m.OwnerReferences)
		m.OwnerReferences = slices.DeleteFunc(m.OwnerReferences, func(ref metav1.OwnerReference) bool {
			return slices.Contains(uids, ref.UID)
		})
		return len(m.OwnerReferences) != n
	}
}

// removeFinalizer is a change for updateMeta that drops finalizer.
func removeFinalizer(finalizer string) func(*metav1.ObjectMeta) bool {
	return func(m *metav1.ObjectMeta) bool {
		n := len(m.Finalizers)
		m.Finalizers = slices.DeleteFunc(m.Finalizers, func(f string) bool { return f == finalizer })
		return len(m.Finalizers) != n
	}
}

// unblockOwners is a change for updateMeta that sets blockOwnerDeletion
// to false in every owner reference.
func unblockOwners(m *metav1.ObjectMeta) bool {
	changed := false
	for i := range m.OwnerReferences {
		if blocks(m.OwnerReferences[i]) {
			m.OwnerReferences[i].BlockOwnerDeletion = new(false)
			changed = true
		}
	}
	return changed
}
