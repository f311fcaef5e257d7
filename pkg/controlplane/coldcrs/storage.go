package coldcrs

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	etcdrpc "go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// emptyStorage is the storage of a kind that etcd held no object of at
// revision rev: its list is empty at rev, and its watch sends nothing
// (but the end of the initial events, when asked) until etcd sees a write
// under the kind's key prefix, and then ends.
type emptyStorage struct {
	kind, listKind schema.GroupVersionKind
	rev            int64
	// watch watches the kind's key prefix from a revision on; ended is
	// called when a write ends a watch.
	watch func(ctx context.Context, fromRev int64) clientv3.WatchChan
	ended func()
	// opened and closed are called with each watch as it starts and ends.
	opened, closed func(*emptyWatch)
}

// NewList is what apiextensions-apiserver's storage lists into.
func (s *emptyStorage) NewList() runtime.Object {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(s.listKind)
	return l
}

// List returns the empty list at the revision etcd answered at.
func (s *emptyStorage) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	l := s.NewList().(*unstructured.UnstructuredList)
	l.SetResourceVersion(strconv.FormatInt(s.rev, 10))
	return l, nil
}

// ConvertToTable is never called: Handler passes tables on.
func (s *emptyStorage) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, fmt.Errorf("tables of %s are served by its CRD's storage", s.kind.Kind)
}

// Watch watches the kind from the resourceVersion asked for (the current
// revision for "" and "0"); with sendInitialEvents it first sends the
// bookmark that ends the (empty) initial events.
func (s *emptyStorage) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	// A streaming list (sendInitialEvents) sends the state at s.rev, at
	// least as new as its resourceVersion, and then what follows it; a
	// watch from a resourceVersion gets what followed that (and 410 once
	// etcd has compacted it).
	from := s.rev
	streaming := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if rv := opts.ResourceVersion; !streaming && rv != "" && rv != "0" {
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
		}
		from = n
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &emptyWatch{result: make(chan watch.Event), cancel: cancel}
	events := s.watch(ctx, from+1)
	if events == nil {
		cancel()
		return nil, apierrors.NewServiceUnavailable("etcd is not reachable")
	}
	var initialEnd *watch.Event
	if streaming && opts.AllowWatchBookmarks {
		initialEnd = s.bookmark(s.rev, map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	// The bookmark a watch that ends at a write sends first: that
	// nothing happened to the kind before that write.
	var handOver func(rev int64) *watch.Event
	if opts.AllowWatchBookmarks {
		handOver = func(rev int64) *watch.Event { return s.bookmark(rev, nil) }
	}
	if s.opened != nil {
		s.opened(w)
	}
	go func() {
		w.run(ctx, initialEnd, handOver, events, s.ended)
		if s.closed != nil {
			s.closed(w)
		}
	}()
	return w, nil
}

// bookmark is a bookmark event at rev, with annotations.
func (s *emptyStorage) bookmark(rev int64, annotations map[string]string) *watch.Event {
	b := &unstructured.Unstructured{}
	b.SetGroupVersionKind(s.kind)
	b.SetResourceVersion(strconv.FormatInt(rev, 10))
	if annotations != nil {
		b.SetAnnotations(annotations)
	}
	return &watch.Event{Type: watch.Bookmark, Object: b}
}

// emptyWatch is a watch of an empty kind.
type emptyWatch struct {
	result   chan watch.Event
	cancel   context.CancelFunc
	stopOnce sync.Once
}

func (w *emptyWatch) Stop()                          { w.stopOnce.Do(w.cancel) }
func (w *emptyWatch) ResultChan() <-chan watch.Event { return w.result }

// run sends initialEnd, if any, then waits for the first etcd response.
// A write under the prefix ends the watch: first, if the client takes
// bookmarks, with one at the revision before the write, so that the
// client's next watch starts there, where the CRD's storage, built by that
// write, serves it the write and what follows (without it, the client
// would watch again from its older resourceVersion, which a new watch
// cache cannot serve: 410, and a relist after a backoff, in which a
// controller such as the garbage collector misses the new objects). A
// compacted revision ends the watch with 410, as upstream's etcd watch
// does, and so does the client going away.
func (w *emptyWatch) run(ctx context.Context, initialEnd *watch.Event, handOver func(rev int64) *watch.Event, events clientv3.WatchChan, ended func()) {
	defer close(w.result)
	defer w.Stop()
	if initialEnd != nil && !w.send(ctx, *initialEnd) {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case resp, ok := <-events:
			if !ok {
				return
			}
			if resp.IsProgressNotify() {
				continue
			}
			switch err := resp.Err(); {
			case err == etcdrpc.ErrCompacted:
				status := apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.").Status()
				w.send(ctx, watch.Event{Type: watch.Error, Object: &status})
			case err == nil && len(resp.Events) > 0:
				if ended != nil {
					ended()
				}
				if handOver != nil {
					w.send(ctx, *handOver(resp.Events[0].Kv.ModRevision - 1))
				}
			}
			return
		}
	}
}

func (w *emptyWatch) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}
