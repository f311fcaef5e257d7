package options

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// The span exporting processor.
//
// The OpenTelemetry SDK's batch span processor drops spans when its queue
// is full and when an export fails, but counts them only in a private
// field, or in metrics behind an experimental environment variable
// (OTEL_GO_X_OBSERVABILITY) sent to the global meter provider, which
// k8s.io/apiserver sets to a no-op one. So gcp exports through spanBatcher,
// which batches the same way (a bounded queue, batches of up to 512 spans
// every five seconds, one export at a time) and counts in its own metrics
// on /metrics:
//
//	apiserver_tracing_exported_spans_total
//	apiserver_tracing_dropped_spans_total{reason="queue_full"|"export_failed"}
//
// A request's span is only ever offered to the queue, never waited for,
// so an OTLP endpoint that is down or slow costs requests nothing.

var (
	exportedSpans = metrics.NewCounter(&metrics.CounterOpts{
		Name:           "apiserver_tracing_exported_spans_total",
		Help:           "Spans the OTLP endpoint of --tracing-config-file accepted.",
		StabilityLevel: metrics.ALPHA,
	})
	droppedSpans = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "apiserver_tracing_dropped_spans_total",
		Help: "Spans dropped instead of exported to the OTLP endpoint of --tracing-config-file: " +
			"queue_full while the endpoint was slower than the spans came, export_failed when it refused them or could not be reached.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	registerTracingMetrics sync.Once
)

// batcherLimits size a spanBatcher.
type batcherLimits struct {
	queue, batch   int
	interval       time.Duration
	exportTimeout  time.Duration
	shutdownExport time.Duration
}

// defaultBatcherLimits are the SDK batch processor's defaults, but for
// the export timeout: 10 s, the OTLP exporter's own, rather than 30 s, and
// at most 2 s for the last export when the server stops, so an unreachable
// endpoint does not hold up a shutdown.
var defaultBatcherLimits = batcherLimits{
	queue:          2048,
	batch:          512,
	interval:       5 * time.Second,
	exportTimeout:  10 * time.Second,
	shutdownExport: 2 * time.Second,
}

// spanBatcher is an sdktrace.SpanProcessor that exports ended, sampled
// spans in batches from one goroutine, dropping and counting what it
// cannot export.
type spanBatcher struct {
	exporter sdktrace.SpanExporter
	endpoint string
	limits   batcherLimits

	queue   chan sdktrace.ReadOnlySpan
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	failing atomic.Bool
	// exports is the context of exports until Shutdown, which cancels it
	// so that an export waiting for the endpoint does not hold it up.
	exports       context.Context
	cancelExports context.CancelFunc
}

func newSpanBatcher(exporter sdktrace.SpanExporter, endpoint string, limits batcherLimits) *spanBatcher {
	registerTracingMetrics.Do(func() {
		legacyregistry.MustRegister(exportedSpans, droppedSpans)
	})
	b := &spanBatcher{
		exporter: exporter,
		endpoint: endpoint,
		limits:   limits,
		queue:    make(chan sdktrace.ReadOnlySpan, limits.queue),
		flushes:  make(chan chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	b.exports, b.cancelExports = context.WithCancel(context.Background())
	go b.run()
	return b
}

// OnStart does nothing: spans are exported when they end.
func (b *spanBatcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s for export, or drops it when the queue is full.
func (b *spanBatcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	select {
	case <-b.stop:
		return
	default:
	}
	select {
	case b.queue <- s:
	default:
		droppedSpans.WithLabelValues("queue_full").Inc()
	}
}

// ForceFlush exports what is queued, or gives up when ctx is done.
func (b *spanBatcher) ForceFlush(ctx context.Context) error {
	reply := make(chan struct{})
	select {
	case b.flushes <- reply:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown gives up an export in progress, exports what is queued within
// the shutdown limit, and stops. Further calls do nothing.
func (b *spanBatcher) Shutdown(ctx context.Context) error {
	first := false
	b.once.Do(func() {
		close(b.stop)
		b.cancelExports()
		first = true
	})
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !first {
		return nil
	}
	return b.exporter.Shutdown(ctx)
}

func (b *spanBatcher) run() {
	defer close(b.done)
	batch := make([]sdktrace.ReadOnlySpan, 0, b.limits.batch)
	ticker := time.NewTicker(b.limits.interval)
	defer ticker.Stop()
	export := func(ctx context.Context, timeout time.Duration) {
		if len(batch) > 0 {
			b.export(ctx, batch, timeout)
			clear(batch)
			batch = batch[:0]
		}
	}
	drain := func(ctx context.Context, timeout time.Duration) {
		for {
			select {
			case s := <-b.queue:
				if batch = append(batch, s); len(batch) == b.limits.batch {
					export(ctx, timeout)
				}
			default:
				export(ctx, timeout)
				return
			}
		}
	}
	for {
		select {
		case s := <-b.queue:
			if batch = append(batch, s); len(batch) == b.limits.batch {
				export(b.exports, b.limits.exportTimeout)
			}
		case <-ticker.C:
			export(b.exports, b.limits.exportTimeout)
		case reply := <-b.flushes:
			drain(b.exports, b.limits.exportTimeout)
			close(reply)
		case <-b.stop:
			// The last export, of what is queued, has a time of its own.
			drain(context.Background(), b.limits.shutdownExport)
			return
		}
	}
}

// export sends batch, counting it as exported or dropped; it logs when
// exports start failing and when they work again, not every failure.
func (b *spanBatcher) export(ctx context.Context, batch []sdktrace.ReadOnlySpan, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := b.exporter.ExportSpans(ctx, batch); err != nil {
		droppedSpans.WithLabelValues("export_failed").Add(float64(len(batch)))
		if !b.failing.Swap(true) {
			klog.Warningf("Tracing: cannot export spans to %s, dropping them until it answers (apiserver_tracing_dropped_spans_total): %v", b.endpoint, err)
		}
		return
	}
	exportedSpans.Add(float64(len(batch)))
	if b.failing.Swap(false) {
		klog.Infof("Tracing: exporting spans to %s again", b.endpoint)
	}
}
