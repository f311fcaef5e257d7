package namespace

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	storageerr "k8s.io/apiserver/pkg/storage/errors"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/apiserver/pkg/util/dryrun"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// FieldLabels returns the field selector labels namespaces support.
func FieldLabels() map[string]string {
	return typed.Identity("metadata.name", "status.phase")
}

// Storage is the REST storage of namespaces and their subresources.
type Storage struct {
	Namespace *REST
	Status    *typed.Subresource
	Finalize  *typed.UpdateOnly
}

// REST is the namespaces resource. Deleting a namespace marks it Terminating
// and leaves it until its spec.finalizers are empty, as upstream: the
// namespace controller empties it and removes the "kubernetes" finalizer.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.GracefulDeleter    = &REST{}
)

// ShortNames implements rest.ShortNamesProvider.
func (r *REST) ShortNames() []string { return []string{"ns"} }

func resource(typer runtime.ObjectTyper) typed.Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return typed.Resource[*corev1.Namespace, *corev1.NamespaceList]{
		GroupResource: corev1.Resource("namespaces"),
		Singular:      "namespace",
		New:           func() *corev1.Namespace { return &corev1.Namespace{} },
		NewList:       func() *corev1.NamespaceList { return &corev1.NamespaceList{} },
		Strategy: &typed.Strategy[*corev1.Namespace]{
			ObjectTyper:         typer,
			NameGenerator:       names.SimpleNameGenerator,
			UnconditionalUpdate: true,
			PrepareCreate: func(_ context.Context, ns *corev1.Namespace) {
				ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
				if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
					ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
				}
			},
			PrepareUpdateFn: func(_ context.Context, ns, old *corev1.Namespace) {
				ns.Spec.Finalizers = old.Spec.Finalizers
				ns.Status = old.Status
			},
			ValidateCreate: func(_ context.Context, ns *corev1.Namespace) field.ErrorList {
				return Validate(ns)
			},
			ValidateUpdateFn: func(_ context.Context, ns, old *corev1.Namespace) field.ErrorList {
				return ValidateUpdate(ns, old)
			},
			ResetFields: map[fieldpath.APIVersion]*fieldpath.Set{
				"v1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
			},
		},
		Table: TableConvertor(),
		Fields: func(ns *corev1.Namespace) fields.Set {
			return fields.Set{"metadata.name": ns.Name, "status.phase": string(ns.Status.Phase)}
		},
	}
}

// NewStorage returns the storage of namespaces, namespaces/status and
// namespaces/finalize.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	main := resource(typer)
	store, err := main.NewStore(optsGetter)
	if err != nil {
		return nil, err
	}
	// An update of a namespace being deleted (a status or finalize write)
	// deletes it only once spec.finalizers is empty too, not as soon as
	// metadata.finalizers is: the namespace controller still has to empty
	// it. Subresources copy the store, so they get this as well.
	store.ShouldDeleteDuringUpdate = func(ctx context.Context, key string, obj, existing runtime.Object) bool {
		ns, ok := obj.(*corev1.Namespace)
		return ok && len(ns.Spec.Finalizers) == 0 && genericregistry.ShouldDeleteDuringUpdate(ctx, key, obj, existing)
	}

	status := typed.StatusStrategy(main.Strategy, "v1", typed.StatusTakesMetadata,
		func(ns, old *corev1.Namespace) { ns.Spec = old.Spec }, ValidateStatusUpdate)

	finalizeStrategy := *main.Strategy
	finalizeStrategy.PrepareUpdateFn = func(_ context.Context, ns, old *corev1.Namespace) { ns.Status = old.Status }
	finalizeStrategy.ValidateUpdateFn = func(_ context.Context, ns, old *corev1.Namespace) field.ErrorList {
		return ValidateFinalizeUpdate(ns, old)
	}
	finalizeStrategy.ResetFields = map[fieldpath.APIVersion]*fieldpath.Set{
		"v1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}

	return &Storage{
		Namespace: &REST{store},
		Status:    typed.NewSubresource(store, status),
		Finalize:  typed.NewUpdateOnly(store, &finalizeStrategy),
	}, nil
}

// Delete marks an active namespace Terminating (setting its deletion
// timestamp and the orphan/foreground finalizers the options ask for) and
// deletes it for real only once its spec.finalizers are empty.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := r.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*corev1.Namespace)
	if options == nil {
		options = metav1.NewDeleteOptions(0)
	}
	if options.Preconditions == nil {
		options.Preconditions = &metav1.Preconditions{}
	}
	if options.Preconditions.UID == nil {
		options.Preconditions.UID = &ns.UID
	} else if *options.Preconditions.UID != ns.UID {
		return nil, false, apierrors.NewConflict(corev1.Resource("namespaces"), name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *options.Preconditions.UID, ns.UID))
	}
	if rv := options.Preconditions.ResourceVersion; rv != nil && *rv != ns.ResourceVersion {
		return nil, false, apierrors.NewConflict(corev1.Resource("namespaces"), name,
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *rv, ns.ResourceVersion))
	}

	if ns.DeletionTimestamp.IsZero() {
		key, err := r.KeyFunc(ctx, name)
		if err != nil {
			return nil, false, err
		}
		preconditions := storage.Preconditions{UID: options.Preconditions.UID, ResourceVersion: options.Preconditions.ResourceVersion}
		out := r.NewFunc()
		err = r.Storage.GuaranteedUpdate(ctx, key, out, false, &preconditions,
			storage.SimpleUpdate(func(existing runtime.Object) (runtime.Object, error) {
				existingNs := existing.(*corev1.Namespace)
				if err := deleteValidation(ctx, existingNs); err != nil {
					return nil, err
				}
				if existingNs.DeletionTimestamp.IsZero() {
					now := metav1.Now()
					existingNs.DeletionTimestamp = &now
				}
				existingNs.Status.Phase = corev1.NamespaceTerminating
				existingNs.Finalizers = deletionFinalizers(existingNs.Finalizers, options)
				return existingNs, nil
			}),
			dryrun.IsDryRun(options.DryRun), nil)
		if err != nil {
			err = storageerr.InterpretGetError(err, corev1.Resource("namespaces"), name)
			err = storageerr.InterpretUpdateError(err, corev1.Resource("namespaces"), name)
			if _, ok := err.(*apierrors.StatusError); !ok {
				err = apierrors.NewInternalError(err)
			}
			return nil, false, err
		}
		return out, false, nil
	}
	if len(ns.Spec.Finalizers) != 0 {
		return ns, false, nil
	}
	return r.Store.Delete(ctx, name, deleteValidation, options)
}

// deletionFinalizers returns the metadata finalizers after a delete with
// options: the orphan and foreground finalizers follow the propagation
// policy, or stay as they are when the request does not say.
func deletionFinalizers(current []string, options *metav1.DeleteOptions) []string {
	want := func(finalizer string, policy metav1.DeletionPropagation) bool {
		if options.OrphanDependents != nil && finalizer == metav1.FinalizerOrphanDependents {
			return *options.OrphanDependents
		}
		if options.PropagationPolicy != nil {
			return *options.PropagationPolicy == policy
		}
		return slices.Contains(current, finalizer)
	}
	out := make([]string, 0, len(current)+1)
	for _, f := range current {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if want(metav1.FinalizerOrphanDependents, metav1.DeletePropagationOrphan) {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if want(metav1.FinalizerDeleteDependents, metav1.DeletePropagationForeground) {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
