package integration

import (
	"bytes"
	"context"
	"fmt"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/layering"
	"io"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsclientv1 "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/gcp-project/gcp/pkg/testserver"
	"github.com/gcp-project/gcp/test/poll"
)

// coldGroups makes each coldCRD's group unique in the test binary, whose
// metrics (which the tests read to tell a kind's storage was built) are
// the process's.
var coldGroups atomic.Int64

// coldCRD is a namespaced CRD with a deprecated served version (so its
// answers carry a warning), printer columns and a schema with defaults, in
// a group named after group.
func coldCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	group = fmt.Sprintf("%d.%s", coldGroups.Add(1), group)
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"size": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
			}},
		},
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: false, Deprecated: true, Schema: schema},
				{Name: "v2", Served: true, Storage: true, Schema: schema, AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
				}},
			},
		},
	}
}

// installColdCRD installs coldCRD(group) in s and returns it, with the
// resource of its storage version.
func installColdCRD(t *testing.T, s *testserver.Server, group string) (*apiextensionsv1.CustomResourceDefinition, schema.GroupVersionResource) {
	t.Helper()
	crd := coldCRD(group)
	if err := testserver.InstallCRDs(context.Background(), s.AdminConfig, time.Minute, crd); err != nil {
		t.Fatal(err)
	}
	return crd, schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v2", Resource: "gadgets"}
}

// coldRequests are the lists and watches a cold kind is asked, by path
// (from /apis/<group>) and Accept header.
var coldRequests = []struct{ path, accept string }{
	{"/v2/gadgets", ""},
	{"/v2/gadgets", "application/json"},
	{"/v2/gadgets?limit=5&labelSelector=a%3Db", "application/json"},
	{"/v2/gadgets?labelSelector=a%3D%3D%3Db", "application/json"},
	{"/v1/namespaces/default/gadgets", "application/yaml"},
	{"/v2/namespaces/default/gadgets?resourceVersion=0", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"},
	{"/v2/gadgets", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"},
	{"/v2/gadgets?watch=true&timeoutSeconds=1&allowWatchBookmarks=true", "application/json"},
	{"/v2/gadgets?watch=true&timeoutSeconds=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan", "application/json"},
	{"/v2/gadgets?watch=true&timeoutSeconds=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"},
}

// jsonResourceVersions are what differs between two JSON or YAML answers
// at different revisions; protoStrings are protobuf's strings of digits
// (a length byte, then as many digits), which are resourceVersions there.
var (
	jsonResourceVersions = regexp.MustCompile(`"resourceVersion":"[0-9]+"|resourceVersion: "[0-9]+"`)
	protoStrings         = regexp.MustCompile(`[\x01-\x14][0-9]+`)
)

// withoutResourceVersions replaces body's resourceVersions with "RV".
func withoutResourceVersions(body []byte) []byte {
	body = jsonResourceVersions.ReplaceAll(body, []byte("RV"))
	return protoStrings.ReplaceAllFunc(body, func(s []byte) []byte {
		n := int(s[0])
		if n > len(s)-1 {
			return s
		}
		return append([]byte("RV"), s[1+n:]...)
	})
}

type answer struct {
	code                  int
	contentType, warnings string
	body                  []byte
}

func ask(t *testing.T, c *http.Client, url, accept string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), strings.Join(resp.Header.Values("Warning"), "|"),
		withoutResourceVersions(body)}
}

// coldMetric is the watch cache metric that shows a kind's storage was
// built, or "" if it was not.
func coldMetric(t *testing.T, s *testserver.Server, gr schema.GroupResource) string {
	t.Helper()
	metrics, err := s.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(line, "apiserver_watch_cache_initialization_duration_seconds_count") && strings.Contains(line, `group="`+gr.Group+`",resource="`+gr.Resource+`"`) {
			return line
		}
	}
	return ""
}

// TestColdCRsAnswerAsTheirStorage: lists and watches of a kind without
// objects are answered without building its CRD's storage, exactly as the
// storage answers them once built (but the resourceVersions): bodies,
// status codes, media types and deprecation warnings.
func TestColdCRsAnswerAsTheirStorage(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	crd, gvr := installColdCRD(t, s, "cold.example.com")
	raw := rawHTTP(t, s.AdminConfig)
	base := strings.TrimSuffix(s.AdminConfig.Host, "/") + "/apis/" + crd.Spec.Group
	cold := make([]answer, len(coldRequests))
	for i, r := range coldRequests {
		cold[i] = ask(t, raw, base+r.path, r.accept)
	}
	if m := coldMetric(t, s, gvr.GroupResource()); m != "" {
		t.Fatalf("the cold kind's storage was built: %s", m)
	}

	// One object makes the kind warm; once it is gone again, the CRD's
	// storage answers the same requests.
	objects := dynamic.NewForConfigOrDie(s.AdminConfig).Resource(gvr).Namespace("default")
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "Gadget", "metadata": map[string]any{"name": "g"}}}
	if _, err := objects.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := objects.Delete(ctx, "g", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, r := range coldRequests {
		warm := ask(t, raw, base+r.path, r.accept)
		c := cold[i]
		if c.code != warm.code || c.contentType != warm.contentType || c.warnings != warm.warnings || !bytes.Equal(c.body, warm.body) {
			t.Errorf("GET %s (Accept %q):\ncold: %d %s %q\n%q\nwarm: %d %s %q\n%q", r.path, r.accept,
				c.code, c.contentType, c.warnings, c.body, warm.code, warm.contentType, warm.warnings, warm.body)
		}
	}
	if m := coldMetric(t, s, gvr.GroupResource()); m == "" {
		t.Fatal("no watch cache metric once the kind is warm: the cold check above proves nothing")
	}
}

// TestInformersOfColdCRsSeeTheFirstObject: a dynamic and a metadata
// informer on an empty kind sync (cold), and see the first object created:
// the cold watch ends at the write, and the informers' next watch is
// served by the CRD's storage.
func TestInformersOfColdCRsSeeTheFirstObject(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	_, gvr := installColdCRD(t, s, "informed.example.com")
	stop := make(chan struct{})
	defer close(stop)
	dyn := dynamicinformer.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(s.AdminConfig), 0)
	meta := metadatainformer.NewSharedInformerFactory(metadata.NewForConfigOrDie(s.AdminConfig), 0)
	dynInformer, metaInformer := dyn.ForResource(gvr).Informer(), meta.ForResource(gvr).Informer()
	dyn.Start(stop)
	meta.Start(stop)
	if !cache.WaitForCacheSync(stop, dynInformer.HasSynced, metaInformer.HasSynced) {
		t.Fatal("informers never synced")
	}
	if m := coldMetric(t, s, gvr.GroupResource()); m != "" {
		t.Fatalf("syncing informers on an empty kind built its storage: %s", m)
	}
	objects := dynamic.NewForConfigOrDie(s.AdminConfig).Resource(gvr).Namespace("default")
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "Gadget", "metadata": map[string]any{"name": "first"}, "spec": map[string]any{}}}
	if _, err := objects.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 50*time.Millisecond, 30*time.Second, func() error {
		for name, informer := range map[string]cache.SharedIndexInformer{"dynamic": dynInformer, "metadata": metaInformer} {
			got, ok, _ := informer.GetStore().GetByKey("default/first")
			if !ok {
				return fmt.Errorf("the %s informer has not seen the first object", name)
			}
			if u, isU := got.(*unstructured.Unstructured); isU {
				if size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size"); size != 3 {
					return fmt.Errorf("the dynamic informer's object has spec.size %d, want the default 3", size)
				}
			}
		}
		return nil
	})
}

// TestColdWatchesEndWhenTheirCRDChangesOrGoes: many concurrent cold
// watches of a kind end when its CRD's spec changes, and again when it is
// deleted, as the watches of a CRD's storage do when the storage is
// replaced or removed, so no client watches with a stale schema or a
// resource that is gone.
func TestColdWatchesEndWhenTheirCRDChangesOrGoes(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	_, gvr := installColdCRD(t, s, "gone.example.com")
	client := dynamic.NewForConfigOrDie(s.AdminConfig).Resource(gvr)
	crds := apiextensionsclientFor(t, s)
	name := gvr.Resource + "." + gvr.Group

	ended := openColdWatches(t, client, 20)
	if m := coldMetric(t, s, gvr.GroupResource()); m != "" {
		t.Fatalf("watches of an empty kind built its storage: %s", m)
	}
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.Spec.Versions[1].AdditionalPrinterColumns = append(crd.Spec.Versions[1].AdditionalPrinterColumns,
		apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"})
	if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, ended, 20, "their CRD's spec changed")

	ended = openColdWatches(t, client, 20)
	if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, ended, 20, "their CRD was deleted")
}

// openColdWatches opens n watches that take bookmarks of client's kind;
// the channel gets one value as each ends.
func openColdWatches(t *testing.T, client dynamic.NamespaceableResourceInterface, n int) <-chan struct{} {
	t.Helper()
	ended := make(chan struct{}, n)
	for range n {
		w, err := client.Watch(context.Background(), metav1.ListOptions{AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for range w.ResultChan() {
			}
			ended <- struct{}{}
		}()
	}
	return ended
}

// waitEnded waits for n watches to end after what happened.
func waitEnded(t *testing.T, ended <-chan struct{}, n int, what string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for i := range n {
		select {
		case <-ended:
		case <-deadline:
			t.Fatalf("%d of %d cold watches still open 30 s after %s", n-i, n, what)
		}
	}
}

func apiextensionsclientFor(t *testing.T, s *testserver.Server) apiextensionsclientv1.CustomResourceDefinitionInterface {
	t.Helper()
	return apiextensionsclient.NewForConfigOrDie(s.AdminConfig).ApiextensionsV1().CustomResourceDefinitions()
}

// TestColdStreamingListFromACompactedRevision: a streaming list (what an
// informer sends after its watch ended) from a resourceVersion etcd has
// compacted gets the current (empty) state and stays open, as the CRD's
// storage does; a plain watch from it gets 410, as the storage's does.
// Before, the streaming list also got 410 after its bookmark, and
// informers on every kind of a big CRD set relisted in a loop.
func TestColdStreamingListFromACompactedRevision(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{
		Stack:     layering.Generic(),
		APIServer: func(o *options.Options) { o.Etcd.StorageConfig.CompactionInterval = time.Second },
	})
	ctx := context.Background()
	crd, gvr := installColdCRD(t, s, "compacted.example.com")
	raw := rawHTTP(t, s.AdminConfig)
	base := strings.TrimSuffix(s.AdminConfig.Host, "/") + "/apis/" + crd.Spec.Group + "/v2/gadgets"
	list := dynamic.NewForConfigOrDie(s.AdminConfig).Resource(gvr)
	old, err := list.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 500*time.Millisecond, time.Minute, func() error {
		if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "filler-"}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		a := ask(t, raw, base+"?watch=true&timeoutSeconds=1&allowWatchBookmarks=true&resourceVersion="+old.GetResourceVersion(), "application/json")
		if !bytes.Contains(a.body, []byte(`"code":410`)) {
			return fmt.Errorf("a watch from resourceVersion %s is not yet 410: %s", old.GetResourceVersion(), a.body)
		}
		return nil
	})
	a := ask(t, raw, base+"?watch=true&timeoutSeconds=2&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion="+old.GetResourceVersion(), "application/json")
	if lines := strings.Split(strings.TrimSpace(string(a.body)), "\n"); a.code != http.StatusOK || len(lines) != 1 || !strings.Contains(lines[0], `"type":"BOOKMARK"`) {
		t.Fatalf("streaming list from a compacted resourceVersion: %d\n%s\nwant its bookmark alone until the timeout", a.code, a.body)
	}
}

// TestWatchWithoutBookmarksOfAnEmptyKindSeesItsWrites: a watch that does
// not take bookmarks (kubectl get -w) is served by the CRD's storage, so it
// goes on past the kind's first write, as upstream's does.
func TestWatchWithoutBookmarksOfAnEmptyKindSeesItsWrites(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	_, gvr := installColdCRD(t, s, "plainwatch.example.com")
	objects := dynamic.NewForConfigOrDie(s.AdminConfig).Resource(gvr).Namespace("default")
	list, err := objects.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := objects.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "Gadget", "metadata": map[string]any{"name": "seen"}}}
	if _, err := objects.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := objects.Delete(ctx, "seen", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []watch.EventType{watch.Added, watch.Deleted} {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type != want {
				t.Fatalf("watch: %v (open %v), want %s", ev.Type, ok, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s event", want)
		}
	}
}
