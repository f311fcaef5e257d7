package registry

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"

	v1 "example.dev/widgets/apis/widgets/v1"
)

// Storage is the REST storage of widgets and widgets/status.
type Storage struct {
	// Widget serves widgets.
	Widget *typed.ShortNamed
	// Status serves widgets/status.
	Status *typed.Subresource
}

// NewStorage returns the storage of widgets (short name "wd") and
// widgets/status. Clients write the spec; the status, which the widget
// controller writes, changes only through widgets/status. A spec change
// bumps metadata.generation, which the controller reports back in
// status.observedGeneration.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	strategy := MainStrategy(typer)
	store, err := typed.Resource[*v1.Widget, *v1.WidgetList]{
		GroupResource: v1.Resource("widgets"),
		Singular:      "widget",
		New:           func() *v1.Widget { return &v1.Widget{} },
		NewList:       func() *v1.WidgetList { return &v1.WidgetList{} },
		Strategy:      strategy,
		Table:         TableConvertor(),
	}.NewStore(optsGetter)
	if err != nil {
		return nil, err
	}
	return &Storage{
		Widget: typed.WithShortNames(store, "wd"),
		Status: typed.NewSubresource(store, StatusStrategy(strategy)),
	}, nil
}

// MainStrategy is the strategy of the widgets resource: the status is
// cleared on create and kept on update, and server-side apply resets it.
func MainStrategy(typer runtime.ObjectTyper) *typed.Strategy[*v1.Widget] {
	return &typed.Strategy[*v1.Widget]{
		ObjectTyper:         typer,
		NameGenerator:       names.SimpleNameGenerator,
		Namespaced:          true,
		UnconditionalUpdate: true,
		Spec:                func(w *v1.Widget) any { return w.Spec },
		PrepareCreate: func(_ context.Context, w *v1.Widget) {
			w.Status = v1.WidgetStatus{}
		},
		PrepareUpdateFn: func(_ context.Context, w, old *v1.Widget) {
			w.Status = old.Status
		},
		ValidateCreate: func(_ context.Context, w *v1.Widget) field.ErrorList {
			return Validate(w)
		},
		ValidateUpdateFn: func(_ context.Context, w, old *v1.Widget) field.ErrorList {
			return ValidateUpdate(w, old)
		},
		ResetFields: map[fieldpath.APIVersion]*fieldpath.Set{
			fieldpath.APIVersion(v1.SchemeGroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
		},
	}
}

// StatusStrategy is the strategy of widgets/status, derived from main: an
// update keeps the spec (so the generation stays), and server-side apply
// resets it.
func StatusStrategy(main *typed.Strategy[*v1.Widget]) *typed.Strategy[*v1.Widget] {
	return typed.StatusStrategy(main, fieldpath.APIVersion(v1.SchemeGroupVersion.String()), typed.StatusTakesMetadata,
		func(w, old *v1.Widget) { w.Spec = old.Spec }, ValidateStatusUpdate)
}
