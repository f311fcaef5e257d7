package garbagecollector

import (
	"cmp"
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// graphBuilder applies events to the graph, one at a time in a single
// goroutine, and queues the nodes the changes make worth a look: the
// dependents of a deleted owner, virtual owners to verify, owners that
// start a foreground or orphan deletion.
type graphBuilder struct {
	graph           *graph
	events          workqueue.TypedInterface[*event]
	attemptToDelete workqueue.TypedRateLimitingInterface[*node]
	attemptToOrphan workqueue.TypedRateLimitingInterface[*node]
	absent          *absentOwners
}

// add queues an event; monitors and workers call it from any goroutine.
func (b *graphBuilder) add(e *event) { b.events.Add(e) }

// addVirtualDelete says that no object exists at id.
func (b *graphBuilder) addVirtualDelete(id objectRef) {
	b.events.Add(&event{typ: deleteEvent, virtual: true, id: id})
}

// caughtUp waits until the graph builder has applied every event queued
// before the call, or ctx is done.
func (b *graphBuilder) caughtUp(ctx context.Context) error {
	done := make(chan struct{})
	b.events.Add(&event{typ: barrierEvent, done: done})
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run processes events until the event queue shuts down.
func (b *graphBuilder) run() {
	for {
		e, quit := b.events.Get()
		if quit {
			return
		}
		b.process(e)
		b.events.Done(e)
	}
}

func (b *graphBuilder) process(e *event) {
	if e.typ == barrierEvent {
		close(e.done)
		return
	}
	b.graph.mu.Lock()
	defer b.graph.mu.Unlock()
	n := b.graph.nodes[e.id.UID]
	switch {
	case e.typ == deleteEvent && e.virtual:
		if n != nil {
			b.absentAt(n, e.id)
		}
	case e.typ == deleteEvent:
		if n != nil {
			b.remove(n, e.id)
		}
	case n == nil:
		b.insert(e)
	default:
		b.update(n, e)
	}
}

// insert adds the node of a newly observed object.
func (b *graphBuilder) insert(e *event) {
	n := &node{
		identity:           e.id,
		owners:             e.obj.GetOwnerReferences(),
		dependents:         map[*node]struct{}{},
		beingDeleted:       deleting(e.obj),
		deletingDependents: deleting(e.obj) && hasFinalizer(e.obj, metav1.FinalizerDeleteDependents),
	}
	b.graph.nodes[n.identity.UID] = n
	b.addToOwners(n, n.owners)
	b.transitions(e.old, e.obj, n)
}

// update applies an observed change to n, which may have been virtual.
func (b *graphBuilder) update(n *node, e *event) {
	if n.virtual {
		b.observe(n, e.id)
	}
	owners := e.obj.GetOwnerReferences()
	added, removed, unblocked := diffOwners(n.owners, owners)
	for _, uid := range unblocked {
		if o, ok := b.graph.nodes[uid]; ok {
			b.attemptToDelete.Add(o)
		}
	}
	n.owners = owners
	b.addToOwners(n, added)
	b.removeFromOwners(n, removed)
	if deleting(e.obj) {
		n.beingDeleted = true
	}
	b.transitions(e.old, e.obj, n)
}

// observe turns virtual node n into the object observed at id. Dependents
// that referred to it by other coordinates are queued: their reference
// may be dangling.
func (b *graphBuilder) observe(n *node, id objectRef) {
	n.virtual = false
	if n.identity == id {
		return
	}
	for dep := range n.dependents {
		if _, elsewhere := refersTo(dep, id); elsewhere {
			b.attemptToDelete.Add(dep)
		}
	}
	n.identity = id
}

// addToOwners records n as a dependent of the owners refs name, creating
// virtual nodes (queued for verification) for owners not seen yet. n is
// queued if an owner is known by other coordinates than a reference says
// (a worker checks the reference), or if an owner waits for its
// dependents: a dependent observed after its owner's foreground deletion
// started (informers deliver objects of different resources, and a
// handler added to a running informer its objects, in no set order) is
// deleted too, not left until the owner goes.
func (b *graphBuilder) addToOwners(n *node, refs []metav1.OwnerReference) {
	suspect := false
	for _, ref := range refs {
		o, ok := b.graph.nodes[ref.UID]
		if !ok {
			o = &node{identity: ownerRef(ref, n.identity.Namespace), dependents: map[*node]struct{}{}, virtual: true}
			b.graph.nodes[ref.UID] = o
			b.attemptToDelete.Add(o)
		}
		o.dependents[n] = struct{}{}
		if _, elsewhere := refersTo(n, o.identity); elsewhere || o.deletingDependents {
			suspect = true
		}
	}
	if suspect {
		b.attemptToDelete.Add(n)
	}
}

// removeFromOwners removes n from the dependents of the owners refs name.
// A virtual owner left without dependents is forgotten.
func (b *graphBuilder) removeFromOwners(n *node, refs []metav1.OwnerReference) {
	for _, ref := range refs {
		o, ok := b.graph.nodes[ref.UID]
		if !ok {
			continue
		}
		delete(o.dependents, n)
		if o.virtual && len(o.dependents) == 0 {
			delete(b.graph.nodes, ref.UID)
		}
	}
}

// remove deletes n, whose object is gone from id, from the graph. Its
// dependents are queued (their owner is gone) and so are its owners that
// wait for their dependents in a foreground deletion.
func (b *graphBuilder) remove(n *node, id objectRef) {
	delete(b.graph.nodes, n.identity.UID)
	for _, ref := range n.owners {
		if o, ok := b.graph.nodes[ref.UID]; ok && o.deletingDependents {
			b.attemptToDelete.Add(o)
		}
	}
	b.removeFromOwners(n, n.owners)
	if len(n.dependents) > 0 {
		b.absent.add(id)
	}
	for dep := range n.dependents {
		b.attemptToDelete.Add(dep)
	}
}

// absentAt handles a worker's finding that no object with n's uid exists
// at id. Dependents that refer to n at id are queued. n goes away unless
// other dependents refer to its uid elsewhere: then a virtual n takes one
// of those identities and is verified again.
func (b *graphBuilder) absentAt(n *node, id objectRef) {
	if !n.virtual {
		if n.identity == id {
			b.remove(n, id)
			return
		}
		b.absent.add(id)
		b.queueDependentsAt(n, id)
		return
	}
	var suspects []*node
	for dep := range n.dependents {
		if _, elsewhere := refersTo(dep, id); elsewhere {
			suspects = append(suspects, dep)
		}
	}
	if len(suspects) == 0 {
		b.remove(n, id)
		return
	}
	b.absent.add(id)
	b.queueDependentsAt(n, id)
	if !covers(id, n.identity) {
		return
	}
	if alt, ok := alternative(suspects, id); ok {
		n.identity = alt
		b.attemptToDelete.AddRateLimited(n)
	}
}

func (b *graphBuilder) queueDependentsAt(n *node, id objectRef) {
	for dep := range n.dependents {
		if at, _ := refersTo(dep, id); at {
			b.attemptToDelete.Add(dep)
		}
	}
}

// covers reports whether a finding about id applies to identity: same
// object coordinates, and the same namespace unless id is cluster-scoped.
func covers(id, identity objectRef) bool {
	return id.UID == identity.UID && id.Name == identity.Name && id.Kind == identity.Kind &&
		groupOf(id.APIVersion) == groupOf(identity.APIVersion) &&
		(id.Namespace == "" || id.Namespace == identity.Namespace)
}

// alternative picks, among the suspects' references to id's uid, one
// that id does not cover; the least by String, so that the choice is
// stable.
func alternative(suspects []*node, id objectRef) (objectRef, bool) {
	var found []objectRef
	for _, dep := range suspects {
		for _, ref := range dep.owners {
			if c := ownerRef(ref, dep.identity.Namespace); ref.UID == id.UID && !covers(id, c) {
				found = append(found, c)
			}
		}
	}
	if len(found) == 0 {
		return objectRef{}, false
	}
	return slices.MinFunc(found, func(a, b objectRef) int {
		return cmp.Compare(a.String(), b.String())
	}), true
}

// transitions queues the work an object's deletion asks for when it
// starts: orphaning its dependents, or deleting them in the foreground.
func (b *graphBuilder) transitions(old, obj metav1.Object, n *node) {
	if startsDeletion(old, obj, metav1.FinalizerOrphanDependents) {
		b.attemptToOrphan.Add(n)
		return
	}
	if startsDeletion(old, obj, metav1.FinalizerDeleteDependents) {
		n.deletingDependents = true
		for dep := range n.dependents {
			b.attemptToDelete.Add(dep)
		}
		b.attemptToDelete.Add(n)
	}
}

// startsDeletion reports whether obj is being deleted with finalizer and
// old (if any) was not.
func startsDeletion(old, obj metav1.Object, finalizer string) bool {
	if !deleting(obj) || !hasFinalizer(obj, finalizer) {
		return false
	}
	return old == nil || !deleting(old) || !hasFinalizer(old, finalizer)
}

func deleting(o metav1.Object) bool { return o.GetDeletionTimestamp() != nil }

func hasFinalizer(o metav1.Object, finalizer string) bool {
	return slices.Contains(o.GetFinalizers(), finalizer)
}

// diffOwners compares two lists of owner references by uid. unblocked
// are the owners that old blocked (blockOwnerDeletion) and new does not,
// removed or changed.
func diffOwners(old, new []metav1.OwnerReference) (added, removed []metav1.OwnerReference, unblocked []types.UID) {
	before := make(map[types.UID]metav1.OwnerReference, len(old))
	for _, ref := range old {
		before[ref.UID] = ref
	}
	for _, ref := range new {
		prev, ok := before[ref.UID]
		if !ok {
			added = append(added, ref)
			continue
		}
		delete(before, ref.UID)
		if blocks(prev) && !blocks(ref) {
			unblocked = append(unblocked, ref.UID)
		}
	}
	for _, ref := range old {
		if _, ok := before[ref.UID]; ok {
			removed = append(removed, ref)
			if blocks(ref) {
				unblocked = append(unblocked, ref.UID)
			}
		}
	}
	return added, removed, unblocked
}

func blocks(ref metav1.OwnerReference) bool {
	return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}
