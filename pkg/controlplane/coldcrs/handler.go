// Package coldcrs answers lists and watches of a custom resource that has
// no objects without making apiextensions-apiserver build the CRD's
// serving structures.
//
// apiextensions-apiserver builds everything a CRD's resources need on the
// first request to them, whatever the request: for each served version the
// schema validators, the CEL programs of its x-kubernetes-validations, the
// server-side apply type converter, a storage with its watch cache and etcd
// watch, request scopes and metrics. With 1,539 CRDs of a Crossplane
// provider that was 785 MiB of heap, and, since that much is allocated in a
// burst, more again of RSS (docs/performance.md, issue 38). A controller
// that holds an informer on every kind it manages (a Crossplane provider,
// the garbage collector, the quota controller) lists and watches every
// kind, most of which have no objects.
//
// Handler sits in front of apiextensions-apiserver's handler. A list or
// watch of a CRD's resources that apiextensions-apiserver would serve, in
// a namespace or across all of them, is answered here when etcd holds no
// object under the resource's (and namespace's) key prefix: with
// k8s.io/apiserver's own list and watch handler (handlers.ListResource)
// over a storage that holds nothing, so parameters, errors, media types,
// metadata-only and watch framing are upstream's. A watch answered here
// ends as soon as etcd sees a write under the prefix, after a bookmark at
// the revision before the write for a client that takes bookmarks; the
// client watches again from there and, the kind no longer being empty,
// apiextensions-apiserver serves it; so only watches that take bookmarks are
// answered here (Handler.fromAnyVersion says what becomes of the others).
// Anything else (a kind with objects, a watch without bookmarks, a field
// selector, a resourceVersion other than "" or "0" for a list, a
// table, a CRD being deleted or not yet established, a subresource, any
// other verb) goes to apiextensions-apiserver. A CRD whose kind was seen
// with objects (or written while watched here) is not answered here again
// until it is deleted: its structures are built.
package coldcrs

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/metrics"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/tools/cache"
)

// Config is what Handler needs.
type Config struct {
	// CRDs is apiextensions-apiserver's own CRD lister.
	CRDs listers.CustomResourceDefinitionLister
	// Etcd returns the client Handler reads key counts and watches
	// through, made on the first cold request and kept.
	Etcd func() (*clientv3.Client, error)
	// Prefix is the etcd key prefix of every resource (the storage
	// config's, "/registry" by default).
	Prefix string
	// MinRequestTimeout is the server's --min-request-timeout: watches
	// last between it and twice it, as upstream's.
	MinRequestTimeout time.Duration
	// RequestTimeout bounds each etcd read (--etcd-request-timeout).
	RequestTimeout time.Duration
}

// Handler answers cold lists and watches and passes everything else to
// next (apiextensions-apiserver's handler).
type Handler struct {
	next http.Handler
	cfg  Config

	clientOnce sync.Once
	client     *clientv3.Client
	clientErr  error

	// warm holds the UIDs of CRDs whose kinds were seen with objects.
	warm sync.Map

	// watches are the open cold watches of each CRD, ended when it
	// changes or goes (EventHandler), as apiextensions-apiserver ends its
	// storage's watches when it replaces the storage.
	mu      sync.Mutex
	watches map[types.UID]map[*emptyWatch]struct{}
}

// New returns a Handler in front of next.
func New(next http.Handler, cfg Config) *Handler {
	return &Handler{next: next, cfg: cfg, watches: map[types.UID]map[*emptyWatch]struct{}{}}
}

// EventHandler is what a CRD informer tells Handler: a CRD whose spec
// changes (its generation) or that is being deleted or gone ends its cold
// watches, as apiextensions-apiserver ends its storage's watches when it
// replaces the storage; their clients watch again and are served by what
// the CRD is now. A deleted CRD is forgotten.
func (h *Handler) EventHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			old, okOld := oldObj.(*apiextensionsv1.CustomResourceDefinition)
			crd, okNew := newObj.(*apiextensionsv1.CustomResourceDefinition)
			if okOld && okNew && (old.Generation != crd.Generation || !crd.DeletionTimestamp.IsZero()) {
				h.endWatches(crd.UID)
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
				h.endWatches(crd.UID)
				h.warm.Delete(crd.UID)
			}
		},
	}
}

// endWatches ends the cold watches of the CRD with uid.
func (h *Handler) endWatches(uid types.UID) {
	h.mu.Lock()
	open := h.watches[uid]
	delete(h.watches, uid)
	h.mu.Unlock()
	for w := range open {
		w.Stop()
	}
}

// track registers w as a cold watch of the CRD with uid until it ends.
func (h *Handler) track(uid types.UID, w *emptyWatch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watches[uid] == nil {
		h.watches[uid] = map[*emptyWatch]struct{}{}
	}
	h.watches[uid][w] = struct{}{}
}

func (h *Handler) untrack(uid types.UID, w *emptyWatch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.watches[uid], w)
	if len(h.watches[uid]) == 0 {
		delete(h.watches, uid)
	}
}

// Close closes the etcd client, if one was made; after it, every request
// goes to next.
func (h *Handler) Close() error {
	h.clientOnce.Do(func() { h.clientErr = errClosed })
	if h.client != nil {
		return h.client.Close()
	}
	return nil
}

var errClosed = errors.New("coldcrs: closed")

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	crd, info := h.coldCandidate(r)
	if crd == nil {
		h.next.ServeHTTP(w, r)
		return
	}
	if info.Verb == "watch" && r.URL.Query().Get("allowWatchBookmarks") != "true" {
		h.next.ServeHTTP(w, h.fromAnyVersion(r, crd, info))
		return
	}
	key := h.keyPrefix(crd, info.Namespace)
	empty, rev := h.empty(r.Context(), key)
	if !empty {
		h.warm.Store(crd.UID, true)
		h.next.ServeHTTP(w, r)
		return
	}
	v := servedVersion(crd, info.APIVersion)
	for _, msg := range deprecationWarnings(crd, v) {
		warning.AddWarning(r.Context(), "", msg)
	}
	store := &emptyStorage{kind: kindOf(crd, v), listKind: listKindOf(crd, v), rev: rev, watch: h.watchFunc(key),
		ended:  func() { h.warm.Store(crd.UID, true) },
		opened: func(w *emptyWatch) { h.track(crd.UID, w) },
		closed: func(w *emptyWatch) { h.untrack(crd.UID, w) }}
	scope := newScope(crd, v)
	list := handlers.ListResource(store, store, scope, info.Verb == "watch", h.cfg.MinRequestTimeout)
	metrics.InstrumentHandlerFunc(strings.ToUpper(info.Verb), info.APIGroup, info.APIVersion, info.Resource, "",
		metrics.CleanScope(info), metrics.APIServerComponent, v.Deprecated, "", list)(w, r)
}

// coldCandidate returns the CRD of a list or watch that Handler may
// answer, and the request's info; a nil CRD for anything else, which
// goes to next. Its checks are those apiextensions-apiserver's handler
// makes before it serves a request, plus Handler's own limits.
func (h *Handler) coldCandidate(r *http.Request) (*apiextensionsv1.CustomResourceDefinition, *request.RequestInfo) {
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok || !info.IsResourceRequest || info.Subresource != "" || (info.Verb != "list" && info.Verb != "watch") {
		return nil, nil
	}
	crd, err := h.cfg.CRDs.Get(info.Resource + "." + info.APIGroup)
	if err != nil {
		return nil, nil
	}
	if _, warm := h.warm.Load(crd.UID); warm || !answerable(crd, info, r) {
		return nil, nil
	}
	return crd, info
}

// answerable says whether Handler answers this list or watch of crd's
// resources, if its kind is empty.
func answerable(crd *apiextensionsv1.CustomResourceDefinition, info *request.RequestInfo, r *http.Request) bool {
	if crd.Spec.Scope == apiextensionsv1.ClusterScoped && info.Namespace != "" {
		return false
	}
	if servedVersion(crd, info.APIVersion) == nil || !crd.DeletionTimestamp.IsZero() ||
		!apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) || apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating) {
		return false
	}
	q := r.URL.Query()
	if q.Get("fieldSelector") != "" || q.Get("continue") != "" {
		return false
	}
	if m := q.Get("resourceVersionMatch"); m != "" && m != "NotOlderThan" {
		return false
	}
	switch rv := q.Get("resourceVersion"); {
	case rv == "" || rv == "0":
	case info.Verb == "list":
		return false
	default:
		if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
			return false
		}
	}
	// Tables are kubectl's: their columns are built with the storage.
	return !strings.Contains(r.Header.Get("Accept"), "as=Table")
}

// fromAnyVersion is a watch that does not take bookmarks (kubectl get -w,
// a test's raw watch) as apiextensions-apiserver is given it. A watch
// answered here ends at the kind's first write, which a client that takes
// bookmarks (an informer's reflector) follows by watching again from the
// bookmark it gets, and another would see as its watch ending; so those go
// to apiextensions-apiserver, whose new watch cache cannot serve the
// resourceVersion of a list answered here once anything was written to
// etcd since (410, where upstream's first list would have started that
// cache). When etcd held nothing of the kind at that resourceVersion nor
// holds anything now, the watch is asked from any version ("0": what the
// kind holds, as ADDED, then what follows), which loses nothing the client
// could have seen; otherwise r is passed on as it is.
func (h *Handler) fromAnyVersion(r *http.Request, crd *apiextensionsv1.CustomResourceDefinition, info *request.RequestInfo) *http.Request {
	q := r.URL.Query()
	from, err := strconv.ParseInt(q.Get("resourceVersion"), 10, 64)
	if err != nil || from <= 0 || q.Get("sendInitialEvents") != "" {
		return r
	}
	key := h.keyPrefix(crd, info.Namespace)
	if empty, _ := h.empty(r.Context(), key); !empty {
		return r
	}
	if empty, _ := h.empty(r.Context(), key, clientv3.WithRev(from)); !empty {
		return r
	}
	q.Set("resourceVersion", "0")
	fromAny := r.Clone(r.Context())
	fromAny.URL.RawQuery = q.Encode()
	return fromAny
}

// keyPrefix is the etcd key prefix of crd's objects, in namespace if it
// is not empty: what apiextensions-apiserver's storage lists.
func (h *Handler) keyPrefix(crd *apiextensionsv1.CustomResourceDefinition, namespace string) string {
	key := strings.TrimSuffix(h.cfg.Prefix, "/") + "/" + crd.Spec.Group + "/" + crd.Status.AcceptedNames.Plural + "/"
	if namespace != "" {
		key += namespace + "/"
	}
	return key
}

// empty says whether etcd holds no key under prefix (at the revision opts
// name, or now), with the revision it answered at; false when etcd cannot
// say (a compacted revision, or etcd down: the request then goes to
// apiextensions-apiserver as it is, which answers the fault).
func (h *Handler) empty(ctx context.Context, prefix string, opts ...clientv3.OpOption) (bool, int64) {
	client, err := h.etcd()
	if err != nil {
		return false, 0
	}
	if h.cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.cfg.RequestTimeout)
		defer cancel()
	}
	opts = append(opts, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
	resp, err := client.Get(clientv3.WithRequireLeader(ctx), prefix, opts...)
	if err != nil || len(resp.Kvs) > 0 {
		return false, 0
	}
	return true, resp.Header.Revision
}

func (h *Handler) etcd() (*clientv3.Client, error) {
	h.clientOnce.Do(func() { h.client, h.clientErr = h.cfg.Etcd() })
	return h.client, h.clientErr
}

// watchFunc returns how an emptyStorage watches the key prefix.
func (h *Handler) watchFunc(prefix string) func(ctx context.Context, fromRev int64) clientv3.WatchChan {
	return func(ctx context.Context, fromRev int64) clientv3.WatchChan {
		client, err := h.etcd()
		if err != nil {
			return nil
		}
		return client.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(fromRev))
	}
}

func servedVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if v := &crd.Spec.Versions[i]; v.Name == version && v.Served {
			return v
		}
	}
	return nil
}
