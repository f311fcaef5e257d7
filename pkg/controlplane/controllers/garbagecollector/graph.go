package garbagecollector

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// objectRef says where an object is: the coordinates of an owner
// reference plus a namespace. Namespace is empty for cluster-scoped
// objects, and for virtual nodes it is a guess (the first dependent's).
type objectRef struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        types.UID
}

func (r objectRef) String() string {
	return fmt.Sprintf("%s/%s %s/%s (uid %s)", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// ownerRef is where an owner reference of an object in namespace points.
func ownerRef(ref metav1.OwnerReference, namespace string) objectRef {
	return objectRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: namespace, Name: ref.Name, UID: ref.UID}
}

// sameCoordinates reports whether ref names the object id: same uid, name,
// kind and API group. The version may differ, as one object is served at
// several versions.
func sameCoordinates(ref metav1.OwnerReference, id objectRef) bool {
	return ref.UID == id.UID && ref.Name == id.Name && ref.Kind == id.Kind &&
		groupOf(ref.APIVersion) == groupOf(id.APIVersion)
}

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apiVersion
	}
	return gv.Group
}

// node is an object of the dependency graph, keyed by uid. A virtual node
// stands for an owner that dependents refer to but that no informer has
// shown yet; a worker checks it exists with a live GET.
type node struct {
	identity objectRef
	// owners are the object's owner references as last observed.
	owners []metav1.OwnerReference
	// dependents are the nodes whose owner references point at this one.
	dependents map[*node]struct{}
	virtual    bool
	// beingDeleted: the object has a deletion timestamp.
	beingDeleted bool
	// deletingDependents: it is being deleted in the foreground (it has
	// the foregroundDeletion finalizer), waiting for its dependents.
	deletingDependents bool
}

// refersTo reports whether dep has an owner reference with id's uid at
// id's coordinates (at), and whether it has one elsewhere: other
// coordinates, or a namespaced owner outside dep's namespace.
func refersTo(dep *node, id objectRef) (at, elsewhere bool) {
	for _, ref := range dep.owners {
		if ref.UID != id.UID {
			continue
		}
		if sameCoordinates(ref, id) && (id.Namespace == "" || id.Namespace == dep.identity.Namespace) {
			at = true
		} else {
			elsewhere = true
		}
	}
	return at, elsewhere
}

// graph is the dependency graph. The graph builder is its only writer;
// workers read it through the methods below, which copy what they return.
type graph struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
}

func newGraph() *graph {
	return &graph{nodes: map[types.UID]*node{}}
}

// nodeState is a copy of a node's fields, for workers.
type nodeState struct {
	identity           objectRef
	virtual            bool
	beingDeleted       bool
	deletingDependents bool
	dependents         int
}

// state copies n; ok is false if n is no longer in the graph.
func (g *graph) state(n *node) (s nodeState, ok bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.nodes[n.identity.UID] != n {
		return nodeState{}, false
	}
	return nodeState{
		identity:           n.identity,
		virtual:            n.virtual,
		beingDeleted:       n.beingDeleted,
		deletingDependents: n.deletingDependents,
		dependents:         len(n.dependents),
	}, true
}

// dependents returns where n's dependents are.
func (g *graph) dependents(n *node) []objectRef {
	g.mu.RLock()
	defer g.mu.RUnlock()
	refs := make([]objectRef, 0, len(n.dependents))
	for dep := range n.dependents {
		refs = append(refs, dep.identity)
	}
	return refs
}

// blockingDependents returns the dependents of n whose reference to n
// has blockOwnerDeletion set: n's foreground deletion waits for them.
func (g *graph) blockingDependents(n *node) []*node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var blocking []*node
	for dep := range n.dependents {
		for _, ref := range dep.owners {
			if ref.UID == n.identity.UID && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				blocking = append(blocking, dep)
				break
			}
		}
	}
	return blocking
}

// deletingDependents reports whether n is waiting for its dependents.
func (g *graph) deletingDependents(n *node) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return n.deletingDependents
}

// anyDependentDeletingDependents reports whether a dependent of n is
// itself being deleted in the foreground: deleting n in the foreground
// too, with blocking references to its owners, could then be a cycle.
func (g *graph) anyDependentDeletingDependents(n *node) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for dep := range n.dependents {
		if dep.deletingDependents {
			return true
		}
	}
	return false
}
