// Package ensurer maintains the API Priority and Fairness bootstrap
// configuration published in k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap,
// with upstream's semantics (pkg/registry/flowcontrol/ensurer):
//
//   - mandatory objects ('exempt' and 'catch-all') are created when missing
//     and their spec is always restored;
//   - suggested objects are created when missing and their spec is updated
//     only while they carry apf.kubernetes.io/autoupdate-spec: "true" (or,
//     without a parsable annotation, while their generation is 1, i.e. nobody
//     edited them); the annotation is then written down;
//   - objects annotated autoupdate-spec "true" that are no longer part of
//     the bootstrap configuration are deleted.
package ensurer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	flowcontrollisters "k8s.io/client-go/listers/flowcontrol/v1"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol/defaults"
)

// FieldManager is the field manager of the ensurer's writes, upstream's.
const FieldManager = "api-priority-and-fairness-config-producer-v1"

// object is a FlowSchema or PriorityLevelConfiguration pointer.
type object interface {
	comparable
	metav1.Object
	runtime.Object
}

// kind holds what the ensurer needs of one kind of configuration object:
// writes go to the API, reads come from a cache.
type kind[T object] struct {
	create func(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	update func(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	delete func(ctx context.Context, name string, opts metav1.DeleteOptions) error
	get    func(name string) (T, error)
	list   func(selector labels.Selector) ([]T, error)
	// specEqualish says whether the defaulted bootstrap spec equals the
	// current one (for 'exempt': ignoring spec.exempt).
	specEqualish func(bootstrap, current T) bool
	// replaceSpec returns a copy of into with from's spec.
	replaceSpec func(into, from T) T
}

func flowSchemas(client flowcontrolclient.FlowSchemaInterface, lister flowcontrollisters.FlowSchemaLister) kind[*flowcontrolv1.FlowSchema] {
	return kind[*flowcontrolv1.FlowSchema]{
		create: client.Create, update: client.Update, delete: client.Delete,
		get: lister.Get, list: lister.List,
		specEqualish: func(boot, current *flowcontrolv1.FlowSchema) bool {
			want := boot.DeepCopy()
			defaults.FlowSchema(want)
			return apiequality.Semantic.DeepEqual(want.Spec, current.Spec)
		},
		replaceSpec: func(into, from *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchema {
			out := into.DeepCopy()
			out.Spec = *from.Spec.DeepCopy()
			return out
		},
	}
}

func priorityLevels(client flowcontrolclient.PriorityLevelConfigurationInterface, lister flowcontrollisters.PriorityLevelConfigurationLister) kind[*flowcontrolv1.PriorityLevelConfiguration] {
	return kind[*flowcontrolv1.PriorityLevelConfiguration]{
		create: client.Create, update: client.Update, delete: client.Delete,
		get: lister.Get, list: lister.List,
		specEqualish: func(boot, current *flowcontrolv1.PriorityLevelConfiguration) bool {
			want := boot.DeepCopy()
			defaults.PriorityLevelConfiguration(want)
			if want.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
				// Administrators may tune the exempt level's shares.
				if current.Spec.Exempt == nil {
					return false
				}
				want.Spec.Exempt.NominalConcurrencyShares = current.Spec.Exempt.NominalConcurrencyShares
				want.Spec.Exempt.LendablePercent = current.Spec.Exempt.LendablePercent
			}
			return apiequality.Semantic.DeepEqual(want.Spec, current.Spec)
		},
		replaceSpec: func(into, from *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
			out := into.DeepCopy()
			out.Spec = *from.Spec.DeepCopy()
			return out
		},
	}
}

// GCPControllersFlowSchema is the name of the FlowSchema gcp adds to the
// suggested ones.
const GCPControllersFlowSchema = "gcp-controllers"

// SuggestedFlowSchemas are upstream's suggested FlowSchemas plus one for
// gcp's controller manager: upstream's kube-controller-manager schema
// (workload-high, precedence 800) for user system:gcp-controllers, so the
// controllers' informers and leader election are not queued behind users'
// requests in global-default.
func SuggestedFlowSchemas() []*flowcontrolv1.FlowSchema {
	controllers := bootstrap.SuggestedFlowSchemaKubeControllerManager.DeepCopy()
	controllers.Name = GCPControllersFlowSchema
	for i := range controllers.Spec.Rules {
		controllers.Spec.Rules[i].Subjects = []flowcontrolv1.Subject{{
			Kind: flowcontrolv1.SubjectKindUser,
			User: &flowcontrolv1.UserSubject{Name: bootstrappolicy.ControllersUser},
		}}
	}
	return append(slices.Clone(bootstrap.SuggestedFlowSchemas), controllers)
}

// Ensure makes one maintenance pass over the bootstrap configuration:
// suggested objects, then mandatory ones, then removal of auto-updated
// objects that are no longer in the bootstrap set. It stops at the first
// of those steps that fails; conflicts are left for the next pass.
func Ensure(ctx context.Context, client flowcontrolclient.FlowcontrolV1Interface, fsLister flowcontrollisters.FlowSchemaLister, plLister flowcontrollisters.PriorityLevelConfigurationLister) error {
	fs := flowSchemas(client.FlowSchemas(), fsLister)
	pl := priorityLevels(client.PriorityLevelConfigurations(), plLister)
	if err := ensureAll(ctx, pl, bootstrap.SuggestedPriorityLevelConfigurations, false); err != nil {
		return fmt.Errorf("failed ensuring suggested settings - %w", err)
	}
	if err := ensureAll(ctx, fs, SuggestedFlowSchemas(), false); err != nil {
		return fmt.Errorf("failed ensuring suggested settings - %w", err)
	}
	if err := ensureAll(ctx, pl, bootstrap.MandatoryPriorityLevelConfigurations, true); err != nil {
		return fmt.Errorf("failed ensuring mandatory settings - %w", err)
	}
	if err := ensureAll(ctx, fs, bootstrap.MandatoryFlowSchemas, true); err != nil {
		return fmt.Errorf("failed ensuring mandatory settings - %w", err)
	}
	if err := removeUnwanted(ctx, fs, bootstrap.MandatoryFlowSchemas, SuggestedFlowSchemas()); err != nil {
		return fmt.Errorf("failed to delete removed settings - %w", err)
	}
	if err := removeUnwanted(ctx, pl, bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations); err != nil {
		return fmt.Errorf("failed to delete removed settings - %w", err)
	}
	return nil
}

// ensureAll ensures boots, up to ensureWorkers at once: they are
// independent objects, and a start waits for the first pass (/readyz),
// which one create after another made one of the last things it waited
// for. It returns the first error in boots' order.
func ensureAll[T object](ctx context.Context, k kind[T], boots []T, mandatory bool) error {
	errs := make([]error, len(boots))
	var wg sync.WaitGroup
	sem := make(chan struct{}, ensureWorkers)
	for i, boot := range boots {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = ensureOne(ctx, k, boot, mandatory)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ensureWorkers is how many objects of a kind ensureAll writes at once.
const ensureWorkers = 8

// ensureOne creates boot when missing, else revises the existing object
// when the strategy asks for it.
func ensureOne[T object](ctx context.Context, k kind[T], boot T, mandatory bool) error {
	name := boot.GetName()
	strategy := "suggested"
	if mandatory {
		strategy = "mandatory"
	}
	var current T
	for {
		var err error
		current, err = k.get(name)
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to retrieve %T type=%s name=%q error=%w", boot, strategy, name, err)
		}
		_, err = k.create(ctx, boot.DeepCopyObject().(T), metav1.CreateOptions{FieldManager: FieldManager})
		if err == nil {
			klog.V(2).InfoS("Created APF bootstrap configuration object", "kind", fmt.Sprintf("%T", boot), "type", strategy, "name", name)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cannot create %T type=%s name=%q error=%w", boot, strategy, name, err)
		}
		// Someone created it concurrently; the cache may not have it yet.
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}

	revised, ok := revise(k, current, boot, mandatory)
	if !ok {
		return nil
	}
	if _, err := k.update(ctx, revised, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		if apierrors.IsConflict(err) {
			klog.V(2).InfoS("APF bootstrap configuration object changed concurrently, will check it later", "type", strategy, "name", name)
			return nil
		}
		return fmt.Errorf("failed to update the %T, will retry later type=%s name=%q error=%w", boot, strategy, name, err)
	}
	klog.V(2).InfoS("Updated APF bootstrap configuration object", "kind", fmt.Sprintf("%T", boot), "type", strategy, "name", name)
	return nil
}

// revise returns the object to write back, if any: the bootstrap spec when
// the spec is auto-updated and differs, and the autoupdate-spec annotation
// set to whether the spec is auto-updated.
func revise[T object](k kind[T], current, boot T, mandatory bool) (T, bool) {
	var zero T
	autoUpdate := mandatory || shouldUpdateSpec(current)
	updateAnnotation := annotationOutdated(current, autoUpdate)
	specChanged := autoUpdate && !k.specEqualish(boot, current)
	if !updateAnnotation && !specChanged {
		return zero, false
	}
	var revised T
	if specChanged {
		revised = k.replaceSpec(current, boot)
	} else {
		revised = current.DeepCopyObject().(T)
	}
	if updateAnnotation {
		annotations := revised.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(autoUpdate)
		revised.SetAnnotations(annotations)
	}
	return revised, true
}

// shouldUpdateSpec follows the autoupdate-spec annotation; without a
// parsable one, only an object nobody edited (generation 1) is updated.
func shouldUpdateSpec(obj metav1.Object) bool {
	if autoUpdate, err := strconv.ParseBool(obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
		return autoUpdate
	}
	return obj.GetGeneration() == 1
}

// annotationOutdated says whether the autoupdate-spec annotation differs
// from desired.
func annotationOutdated(obj metav1.Object, desired bool) bool {
	if value, ok := obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]; ok {
		if current, err := strconv.ParseBool(value); err == nil && current == desired {
			return false
		}
	}
	return true
}

// removeUnwanted deletes the objects annotated autoupdate-spec "true" whose
// name is not in the bootstrap sets: configuration an older version of the
// server created and this one no longer has. Objects without the
// annotation, or with "false", are the administrator's.
func removeUnwanted[T object](ctx context.Context, k kind[T], bootSets ...[]T) error {
	wanted := sets.New[string]()
	for _, boots := range bootSets {
		for _, b := range boots {
			wanted.Insert(b.GetName())
		}
	}
	current, err := k.list(labels.Everything())
	if err != nil {
		return err
	}
	var errs []error
	for _, obj := range current {
		name := obj.GetName()
		if wanted.Has(name) {
			continue
		}
		value, ok := obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]
		if !ok {
			continue
		}
		if autoUpdate, err := strconv.ParseBool(value); err != nil || !autoUpdate {
			continue
		}
		err := k.delete(ctx, name, metav1.DeleteOptions{})
		switch {
		case err == nil:
			klog.V(2).InfoS("Deleted APF configuration object no longer in the bootstrap configuration", "kind", fmt.Sprintf("%T", obj), "name", name)
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("failed to delete unwanted APF object %q - %w", name, err))
		}
	}
	return errors.Join(errs...)
}
