package garbagecollector

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
	// barrierEvent changes nothing: the graph builder closes its done
	// channel, telling that every event queued before it is applied.
	barrierEvent
)

// event is a change of one object seen by a monitor or, when virtual, a
// worker's finding that no object exists at id.
type event struct {
	typ     eventType
	virtual bool
	id      objectRef
	// obj is the object's new state; nil for virtual events.
	obj metav1.Object
	// old is the previous state for updates, nil otherwise.
	old metav1.Object
	// done is closed when a barrierEvent is reached.
	done chan struct{}
}

// eventHandler turns a monitor's notifications about objects of kind gvk
// into events for the graph builder. Updates that change nothing the
// graph keeps (owner references, finalizers, deletion) are dropped; an
// update that replaces the object by another of the same name (a delete
// and re-create the watch missed) is a delete and an add.
func eventHandler(gvk schema.GroupVersionKind, add func(*event)) cache.ResourceEventHandler {
	identity := func(o metav1.Object) objectRef {
		return objectRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID()}
	}
	emit := func(typ eventType, obj, old any) {
		o, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		e := &event{typ: typ, id: identity(o), obj: o}
		if old != nil {
			if e.old, err = meta.Accessor(old); err != nil {
				return
			}
		}
		add(e)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { emit(addEvent, obj, nil) },
		UpdateFunc: func(old, obj any) {
			o, err1 := meta.Accessor(obj)
			p, err2 := meta.Accessor(old)
			switch {
			case err1 != nil || err2 != nil:
			case o.GetUID() != p.GetUID():
				emit(deleteEvent, old, nil)
				emit(addEvent, obj, nil)
			case graphRelevantChange(p, o):
				emit(updateEvent, obj, old)
			}
		},
		DeleteFunc: func(obj any) {
			if gone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = gone.Obj
			}
			emit(deleteEvent, obj, nil)
		},
	}
}

// graphRelevantChange reports whether an update changes what the graph
// builder looks at.
func graphRelevantChange(old, obj metav1.Object) bool {
	return (old.GetDeletionTimestamp() == nil) != (obj.GetDeletionTimestamp() == nil) ||
		!slices.Equal(old.GetFinalizers(), obj.GetFinalizers()) ||
		!equality.Semantic.DeepEqual(old.GetOwnerReferences(), obj.GetOwnerReferences())
}
