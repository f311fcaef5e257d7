// Package events serves events.k8s.io/v1 events. They are core/v1 Events in
// storage, as upstream: the events.k8s.io/v1 Event converts to the core type,
// which is registered as this group's internal version.
package events

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core/event"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is the events.k8s.io group. Events live as long as
// StorageOptions.EventTTL (--event-ttl) says.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns events.k8s.io.
func (APIGroup) GroupName() string { return eventsv1.GroupName }

// DiscoveryPriorities implements registry.DiscoveryPrioritizer with
// kube-apiserver's priorities for the group.
func (APIGroup) DiscoveryPriorities() map[string]registry.DiscoveryPriority {
	return map[string]registry.DiscoveryPriority{
		"v1": {Group: 17750, Version: 15},
	}
}

// InstallScheme registers events.k8s.io/v1 Event, core/v1 Event as the
// group's internal type, the conversions between them and the field labels.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(eventsv1.SchemeGroupVersion, &eventsv1.Event{}, &eventsv1.EventList{})
	scheme.AddKnownTypes(schema.GroupVersion{Group: eventsv1.GroupName, Version: runtime.APIVersionInternal}, &corev1.Event{}, &corev1.EventList{})
	metav1.AddToGroupVersion(scheme, eventsv1.SchemeGroupVersion)
	conversions := []struct {
		a, b interface{}
		fn   conversion.ConversionFunc
	}{
		{(*eventsv1.Event)(nil), (*corev1.Event)(nil), func(a, b interface{}, _ conversion.Scope) error {
			event.ToCore(a.(*eventsv1.Event), b.(*corev1.Event))
			return nil
		}},
		{(*corev1.Event)(nil), (*eventsv1.Event)(nil), func(a, b interface{}, _ conversion.Scope) error {
			event.FromCore(a.(*corev1.Event), b.(*eventsv1.Event))
			return nil
		}},
		{(*eventsv1.EventList)(nil), (*corev1.EventList)(nil), func(a, b interface{}, _ conversion.Scope) error {
			in, out := a.(*eventsv1.EventList), b.(*corev1.EventList)
			out.ListMeta = in.ListMeta
			out.Items = make([]corev1.Event, len(in.Items))
			for i := range in.Items {
				event.ToCore(&in.Items[i], &out.Items[i])
			}
			return nil
		}},
		{(*corev1.EventList)(nil), (*eventsv1.EventList)(nil), func(a, b interface{}, _ conversion.Scope) error {
			in, out := a.(*corev1.EventList), b.(*eventsv1.EventList)
			out.ListMeta = in.ListMeta
			out.Items = make([]eventsv1.Event, len(in.Items))
			for i := range in.Items {
				event.FromCore(&in.Items[i], &out.Items[i])
			}
			return nil
		}},
	}
	for _, c := range conversions {
		if err := scheme.AddConversionFunc(c.a, c.b, c.fn); err != nil {
			return fmt.Errorf("events.k8s.io conversion: %w", err)
		}
	}
	return typed.AddFieldLabels(scheme, eventsv1.SchemeGroupVersion.WithKind("Event"), event.EventsV1FieldLabels())
}

// NewRESTStorage builds the storage of events.k8s.io/v1 events over the core
// events' etcd location and encoding.
func (g APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(eventsv1.GroupName)
	store, err := event.NewStore(eventsv1.GroupName, opts.Scheme, coreEventsOptions{opts.RESTOptionsGetter}, event.TTL(opts.EventTTL).OrDefault())
	if err != nil {
		return info, false, err
	}
	enabled := opts.Enabled(&info, eventsv1.SchemeGroupVersion, map[string]rest.Storage{"events": store})
	return info, enabled, nil
}

// coreEventsOptions gives events.k8s.io events the storage options of core
// events, so both live under one etcd prefix in one encoding.
type coreEventsOptions struct {
	generic.RESTOptionsGetter
}

func (c coreEventsOptions) GetRESTOptions(_ schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	return c.RESTOptionsGetter.GetRESTOptions(corev1.Resource("events"), example)
}
