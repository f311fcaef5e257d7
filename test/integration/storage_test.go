package integration

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/pkg/testserver"
	"github.com/gcp-project/gcp/test/poll"
)

// TestProtobufInEtcd reads the stored bytes of a configmap straight from
// etcd: native objects are stored as protobuf, like kube-apiserver does.
func TestProtobufInEtcd(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "proto"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.UnixSocketURL(filepath.Join(s.DataDir, "etcd.sock"))}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Get(ctx, "/registry/configmaps/default/proto")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("want one key, got %d", len(resp.Kvs))
	}
	if v := resp.Kvs[0].Value; !bytes.HasPrefix(v, []byte("k8s\x00")) {
		t.Fatalf("stored value is not protobuf (want prefix k8s\\x00): %q", v[:min(len(v), 40)])
	}
}

// TestTwoServersShareNothing starts two servers in one test binary: an
// object created in one is not in the other.
func TestTwoServersShareNothing(t *testing.T) {
	t.Parallel()
	a, b := startGeneric(t), startGeneric(t)
	ctx := context.Background()
	if _, err := a.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "only-in-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Client.CoreV1().ConfigMaps("default").Get(ctx, "only-in-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("server b sees server a's object: %v", err)
	}
}

// TestFieldSelectors covers the fields upstream supports for the served
// resources, and a 400 for one it does not.
func TestFieldSelectors(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	secrets := s.Client.CoreV1().Secrets("default")
	for name, typ := range map[string]corev1.SecretType{"plain": corev1.SecretTypeOpaque, "basic": corev1.SecretTypeBasicAuth} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: typ, StringData: map[string]string{"username": "u", "password": "p"}}
		if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := secrets.List(ctx, metav1.ListOptions{FieldSelector: "type=kubernetes.io/basic-auth"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "basic" {
		t.Fatalf("type field selector: got %v", list.Items)
	}
	list, err = secrets.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=plain"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("metadata.name field selector: %v %v", list, err)
	}
	if _, err := secrets.List(ctx, metav1.ListOptions{FieldSelector: "data.password=p"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("unsupported field selector: want 400, got %v", err)
	}
	ns, err := s.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Active"})
	if err != nil || len(ns.Items) < 3 {
		t.Fatalf("namespace status.phase selector: %v %v", ns, err)
	}
}

// TestEventsBothGroups writes an event through events.k8s.io/v1 and reads it
// through core/v1 (one storage), with field selectors of each group.
func TestEventsBothGroups(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "e1", Namespace: "default"},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "example.com/ctl",
		ReportingInstance:   "ctl-1",
		Action:              "Test",
		Reason:              "Tested",
		Type:                corev1.EventTypeNormal,
		Note:                "hello",
		Regarding:           corev1.ObjectReference{Kind: "ConfigMap", Name: "cm1", Namespace: "default"},
	}
	if _, err := s.Client.EventsV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	core, err := s.Client.CoreV1().Events("default").Get(ctx, "e1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if core.Message != "hello" || core.InvolvedObject.Name != "cm1" || core.ReportingController != "example.com/ctl" {
		t.Fatalf("core view of the event: %+v", core)
	}
	list, err := s.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=cm1,reason=Tested"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("core field selector: %v %v", list, err)
	}
	elist, err := s.Client.EventsV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=cm1,reportingController=example.com/ctl"})
	if err != nil || len(elist.Items) != 1 || elist.Items[0].Note != "hello" {
		t.Fatalf("events.k8s.io field selector: %v %v", elist, err)
	}
}

// TestEventTTL: --event-ttl reaches the event registries of both groups;
// each stored event carries an etcd lease of that many seconds.
func TestEventTTL(t *testing.T) {
	t.Parallel()
	const ttl = 90 * time.Minute // the default is an hour
	s := testserver.Start(t, testserver.Options{APIServer: func(o *options.Options) { o.EventTTL = ttl }})
	ctx := context.Background()
	core := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "core", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Name: "cm", Namespace: "default"}, Reason: "Tested"}
	if _, err := s.Client.CoreV1().Events("default").Create(ctx, core, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: "default"}, EventTime: metav1.NewMicroTime(time.Now()),
		ReportingController: "example.com/ctl", ReportingInstance: "ctl-1", Action: "Test", Reason: "Tested", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "ConfigMap", Name: "cm", Namespace: "default"}}
	if _, err := s.Client.EventsV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.UnixSocketURL(filepath.Join(s.DataDir, "etcd.sock"))}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, name := range []string{"core", "events"} {
		resp, err := c.Get(ctx, "/registry/events/default/"+name)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("event %s in etcd: %v %v", name, resp, err)
		}
		lease, err := c.TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
		if err != nil {
			t.Fatal(err)
		}
		// The storage asks for a little more, to share leases between
		// objects: 5% of the TTL, at most a minute.
		if got := time.Duration(lease.GrantedTTL) * time.Second; got < ttl || got > ttl+time.Minute {
			t.Errorf("event %s: lease of %v, want --event-ttl %v (plus at most a minute)", name, got, ttl)
		}
	}
}

// TestConsistentListsFromWatchCache checks that a consistent list (no
// resourceVersion) is served by the watch cache, as kube-apiserver serves
// it with etcd 3.4.31+/3.5.13+, not by a range read of etcd: the storage
// layer must have learned that the embedded etcd answers watch progress
// requests, which it checks through the etcd clients' endpoints.
func TestConsistentListsFromWatchCache(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "listed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const served = `apiserver_watch_cache_consistent_read_total{fallback="false",group="",resource="configmaps",success="true"}`
	poll.Until(t, 100*time.Millisecond, 30*time.Second, func() error {
		if _, err := s.Client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		metrics, err := s.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(metrics, []byte(served+" ")) {
			return fmt.Errorf("no consistent list of configmaps was served from the watch cache (no %s in /metrics)", served)
		}
		return nil
	})
}
