package options

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/component-base/metrics/testutil"

	"github.com/gcp-project/gcp/test/freeport"
)

// TestTracingConfigErrorsNameFileAndField holds that a tracing
// configuration that does not decode or validate is refused by Validate
// in one line naming the file and the field.
func TestTracingConfigErrorsNameFileAndField(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ content, field string }{
		"sampling rate too high": {"samplingRatePerMillion: 2000000", "samplingRatePerMillion"},
		"negative sampling rate": {"samplingRatePerMillion: -1", "samplingRatePerMillion"},
		"sampling rate a string": {"samplingRatePerMillion: all", "samplingRatePerMillion"},
		"unknown field":          {"sampleRate: 5", "sampleRate"},
		"bad endpoint scheme":    {"endpoint: http://collector:4317", "endpoint"},
		"not YAML":               {"endpoint: [", "yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "tracing.yaml")
			content := "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n" + tc.content + "\n"
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			o := NewTracingOptions()
			o.ConfigFile = file
			errs := o.Validate()
			if len(errs) != 1 {
				t.Fatalf("Validate() = %v, want one error", errs)
			}
			msg := errs[0].Error()
			if !strings.Contains(msg, file) || !strings.Contains(msg, tc.field) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming %s and %s", msg, file, tc.field)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		o := NewTracingOptions()
		o.ConfigFile = filepath.Join(t.TempDir(), "absent.yaml")
		if errs := o.Validate(); len(errs) != 1 || !strings.Contains(errs[0].Error(), o.ConfigFile) {
			t.Errorf("Validate() = %v, want one error naming the file", errs)
		}
	})
}

// TestUnreachableEndpointDropsAndCounts holds that with nothing listening
// at the OTLP endpoint, ending spans does not wait for it (this test
// would hang otherwise: there is no timing assertion) and the spans are
// dropped and counted: export_failed for those exported and refused,
// queue_full for those that found the queue full meanwhile. (The counters
// are the process's; other tests only add to them.)
func TestUnreachableEndpointDropsAndCounts(t *testing.T) {
	t.Parallel()
	endpoint := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	exporter, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	limits := batcherLimits{queue: 8, batch: 4, interval: time.Hour, exportTimeout: time.Second, shutdownExport: time.Second}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newSpanBatcher(exporter, endpoint, limits)))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	failedBefore := counterValue(t, "export_failed")
	fullBefore := counterValue(t, "queue_full")
	tracer := tp.Tracer("test")
	for range 1000 {
		_, span := tracer.Start(context.Background(), "request")
		span.End()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, "export_failed") - failedBefore; got < 4 {
		t.Errorf("export_failed rose by %v, want at least a batch (4)", got)
	}
	// The exporting goroutine holds a batch while it waits for the
	// endpoint and the queue holds limits.queue: the rest are dropped.
	if got, want := counterValue(t, "queue_full")-fullBefore, float64(1000-limits.queue-limits.batch); got < want {
		t.Errorf("queue_full rose by %v, want at least %v", got, want)
	}
}

func counterValue(t *testing.T, reason string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(droppedSpans.WithLabelValues(reason))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestShutdownGivesUpAnExportInProgress holds that stopping does not wait
// out an export to an endpoint that does not answer: with an export
// timeout of an hour (the processor's and the exporter's, retrying all the
// while), Shutdown returns within its own context (a minute) only if it
// cancels the export.
func TestShutdownGivesUpAnExportInProgress(t *testing.T) {
	t.Parallel()
	endpoint := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	exporter, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure(),
		otlptracegrpc.WithTimeout(time.Hour), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: time.Second, MaxInterval: time.Second, MaxElapsedTime: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	limits := batcherLimits{queue: 8, batch: 1, interval: time.Hour, exportTimeout: time.Hour, shutdownExport: time.Second}
	b := newSpanBatcher(exporter, endpoint, limits)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	_, span := tp.Tracer("test").Start(context.Background(), "request")
	span.End() // a batch of one: exported at once, waiting for the endpoint
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
