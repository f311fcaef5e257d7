package etcdstorage

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
)

// TestInProcessClientSpansJoinTheTrace holds that the in-process etcd
// clients make a client span of each call, named as otelgrpc names the
// gRPC clients' ("etcdserverpb.KV/Txn"), with the storage
// configuration's tracer provider, in the caller's trace.
func TestInProcessClientSpansJoinTheTrace(t *testing.T) {
	h := startEtcd(t)
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s, _, _ := configMapStorage(t, h, false, func(c *storagebackend.Config) { c.Transport.TracerProvider = tp })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx, parent := tp.Tracer("test").Start(ctx, "request")
	in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "traced", Namespace: "default"}}
	if err := s.Create(ctx, "/configmaps/default/traced", in, &corev1.ConfigMap{}, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Get(ctx, "/configmaps/default/traced", storage.GetOptions{}, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	parent.End()

	// The store's own spans ("Create etcd3") come between the request's
	// and the client's.
	names := map[string]bool{}
	for _, span := range recorder.Ended() {
		if span.SpanContext().TraceID() == parent.SpanContext().TraceID() && span.Parent().IsValid() {
			names[span.Name()] = true
		}
	}
	for _, want := range []string{"etcdserverpb.KV/Txn", "etcdserverpb.KV/Range"} {
		if !names[want] {
			t.Errorf("no %s span in the request's trace; got %v", want, names)
		}
	}
}
