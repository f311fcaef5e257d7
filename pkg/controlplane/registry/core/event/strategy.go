package event

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// DefaultTTL is how long events live in etcd, as kube-apiserver's --event-ttl.
const DefaultTTL = time.Hour

// TTL is how long events are kept; zero means DefaultTTL.
type TTL time.Duration

// OrDefault returns the TTL, or DefaultTTL when it is zero.
func (t TTL) OrDefault() time.Duration {
	if t <= 0 {
		return DefaultTTL
	}
	return time.Duration(t)
}

// CoreFieldLabels returns the field selector labels of core/v1 events.
func CoreFieldLabels() map[string]string {
	return typed.Identity("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
		"involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
		"involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
		"metadata.namespace", "metadata.name")
}

// EventsV1FieldLabels returns the field selector labels of events.k8s.io/v1
// events, mapped onto the core field set the storage computes.
func EventsV1FieldLabels() map[string]string {
	return map[string]string{
		"reason":                    "reason",
		"regarding.kind":            "involvedObject.kind",
		"regarding.namespace":       "involvedObject.namespace",
		"regarding.name":            "involvedObject.name",
		"regarding.uid":             "involvedObject.uid",
		"regarding.apiVersion":      "involvedObject.apiVersion",
		"regarding.resourceVersion": "involvedObject.resourceVersion",
		"regarding.fieldPath":       "involvedObject.fieldPath",
		"reportingController":       "reportingComponent",
		"type":                      "type",
		"metadata.namespace":        "metadata.namespace",
		"metadata.name":             "metadata.name",
	}
}

// SelectableFields returns the fields of an event that field selectors match.
func SelectableFields(ev *corev1.Event) fields.Set {
	set := typed.ObjectMetaFieldsSet(ev, true)
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	set["involvedObject.kind"] = ev.InvolvedObject.Kind
	set["involvedObject.namespace"] = ev.InvolvedObject.Namespace
	set["involvedObject.name"] = ev.InvolvedObject.Name
	set["involvedObject.uid"] = string(ev.InvolvedObject.UID)
	set["involvedObject.apiVersion"] = ev.InvolvedObject.APIVersion
	set["involvedObject.resourceVersion"] = ev.InvolvedObject.ResourceVersion
	set["involvedObject.fieldPath"] = ev.InvolvedObject.FieldPath
	set["reason"] = ev.Reason
	set["reportingComponent"] = ev.ReportingController
	set["source"] = source
	set["type"] = ev.Type
	return set
}

// NewStore returns the storage of events for group ("" or "events.k8s.io").
// Both groups store core/v1 Events under the same etcd prefix, as upstream;
// validation depends on the group/version the request came through.
func NewStore(group string, typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, ttl time.Duration) (*genericregistry.Store, error) {
	store, err := typed.Resource[*corev1.Event, *corev1.EventList]{
		GroupResource: schema.GroupResource{Group: group, Resource: "events"},
		Singular:      "event",
		New:           func() *corev1.Event { return &corev1.Event{} },
		NewList:       func() *corev1.EventList { return &corev1.EventList{} },
		Strategy: &typed.Strategy[*corev1.Event]{
			ObjectTyper:         typer,
			NameGenerator:       names.SimpleNameGenerator,
			Namespaced:          true,
			CreateOnUpdate:      true,
			UnconditionalUpdate: true,
			ValidateCreate: func(ctx context.Context, ev *corev1.Event) field.ErrorList {
				return Validate(ev, requestGroupVersion(ctx))
			},
			ValidateUpdateFn: func(ctx context.Context, ev, old *corev1.Event) field.ErrorList {
				return ValidateUpdate(ev, old, requestGroupVersion(ctx))
			},
		},
		Table:  TableConvertor(),
		Fields: SelectableFields,
	}.NewStore(optsGetter)
	if err != nil {
		return nil, err
	}
	seconds := uint64(ttl.Seconds())
	store.TTLFunc = func(runtime.Object, uint64, bool) (uint64, error) { return seconds, nil }
	return store, nil
}

func requestGroupVersion(ctx context.Context) schema.GroupVersion {
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
		return schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	}
	return schema.GroupVersion{}
}
