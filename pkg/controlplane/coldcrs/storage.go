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
	// called when a write (or an error) ends a watch.
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
	from := s.rev
	if rv := opts.ResourceVersion; rv != "" && rv != "0" {
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
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents && opts.AllowWatchBookmarks {
		b := &unstructured.Unstructured{}
		b.SetGroupVersionKind(s.kind)
		b.SetResourceVersion(strconv.FormatInt(s.rev, 10))
		b.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		initialEnd = &watch.Event{Type: watch.Bookmark, Object: b}
	}
	if s.opened != nil {
		s.opened(w)
	}
	go func() {
		w.run(ctx, initialEnd, events, s.ended)
		if s.closed != nil {
			s.closed(w)
		}
	}()
	return w, nil
}

// emptyWatch is a watch of an empty kind.
type emptyWatch struct {
	result   chan watch.Event
	cancel   context.CancelFunc
	stopOnce sync.Once
}

func (w *emptyWatch) Stop()                          { w.stopOnce.Do(w.cancel) }
func (w *emptyWatch) ResultChan() <-chan watch.Event { return w.result }

// run sends initialEnd, if any, then waits for the first etcd response:
// a write under the prefix ends the watch (the client watches again and
// is served by the CRD's storage), a compacted revision ends it with 410
// as upstream's etcd watch does, and so does the client going away.
func (w *emptyWatch) run(ctx context.Context, initialEnd *watch.Event, events clientv3.WatchChan, ended func()) {
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
			if ended != nil {
				ended()
			}
			if err := resp.Err(); err == etcdrpc.ErrCompacted {
				status := apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.").Status()
				w.send(ctx, watch.Event{Type: watch.Error, Object: &status})
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
