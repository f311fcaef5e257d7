package etcdstorage

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/status"
)

// Spans of the in-process etcd clients.
//
// k8s.io/apiserver's storage factory gives its gRPC etcd clients
// otelgrpc's stats handler, so each etcd call is a client span in the
// request's trace, named after the gRPC method ("etcdserverpb.KV/Txn").
// An in-process client makes no gRPC call for a stats handler to see (it
// calls etcd's servers directly), so gcp wraps its KV the same way: one
// span per call, with the same names and rpc.* attributes, from the
// storage configuration's tracer provider (Transport.TracerProvider), as
// a child of the span in the call's context. Watches and range streams
// are long-lived and belong to no request; they have no span.

// tracerName is the instrumentation scope of the spans.
const tracerName = "github.com/gcp-project/gcp/pkg/controlplane/etcdstorage"

// withSpans returns kv making a span of each call with tp, or kv itself
// when tp is nil.
func withSpans(kv clientv3.KV, tp trace.TracerProvider) clientv3.KV {
	if tp == nil {
		return kv
	}
	return &tracedKV{KV: kv, tracer: tp.Tracer(tracerName)}
}

// tracedKV is a KV whose calls are client spans.
type tracedKV struct {
	clientv3.KV
	tracer trace.Tracer
}

// start begins the span of KV's method.
func (k *tracedKV) start(ctx context.Context, method string) (context.Context, trace.Span) {
	return k.tracer.Start(ctx, "etcdserverpb.KV/"+method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		semconv.RPCSystemNameGRPC,
		attribute.String("rpc.service", "etcdserverpb.KV"),
		semconv.RPCMethod(method),
	))
}

// end ends span with err's gRPC status.
func end(span trace.Span, err error) {
	code := status.Code(err)
	span.SetAttributes(semconv.RPCResponseStatusCode(code.String()))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (k *tracedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	ctx, span := k.start(ctx, "Put")
	resp, err := k.KV.Put(ctx, key, val, opts...)
	end(span, err)
	return resp, err
}

func (k *tracedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	ctx, span := k.start(ctx, "Range")
	resp, err := k.KV.Get(ctx, key, opts...)
	end(span, err)
	return resp, err
}

func (k *tracedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	ctx, span := k.start(ctx, "DeleteRange")
	resp, err := k.KV.Delete(ctx, key, opts...)
	end(span, err)
	return resp, err
}

func (k *tracedKV) Compact(ctx context.Context, rev int64, opts ...clientv3.CompactOption) (*clientv3.CompactResponse, error) {
	ctx, span := k.start(ctx, "Compact")
	resp, err := k.KV.Compact(ctx, rev, opts...)
	end(span, err)
	return resp, err
}

func (k *tracedKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	method := "Range"
	switch {
	case op.IsPut():
		method = "Put"
	case op.IsDelete():
		method = "DeleteRange"
	case op.IsTxn():
		method = "Txn"
	}
	ctx, span := k.start(ctx, method)
	resp, err := k.KV.Do(ctx, op)
	end(span, err)
	return resp, err
}

func (k *tracedKV) Txn(ctx context.Context) clientv3.Txn {
	return &tracedTxn{kv: k, ctx: ctx, txn: k.KV.Txn(ctx)}
}

// tracedTxn is a transaction whose Commit is a span. The inner
// transaction keeps the caller's context; the span's context only
// parents the span.
type tracedTxn struct {
	kv  *tracedKV
	ctx context.Context
	txn clientv3.Txn
}

func (t *tracedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.txn = t.txn.If(cs...)
	return t
}

func (t *tracedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.txn = t.txn.Then(ops...)
	return t
}

func (t *tracedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.txn = t.txn.Else(ops...)
	return t
}

func (t *tracedTxn) Commit() (*clientv3.TxnResponse, error) {
	_, span := t.kv.start(t.ctx, "Txn")
	resp, err := t.txn.Commit()
	end(span, err)
	return resp, err
}
