package options

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/tracing"
	tracingapi "k8s.io/component-base/tracing/api/v1"
)

// TracingOptions are kube-apiserver's --tracing-config-file: a
// TracingConfiguration (apiserver.config.k8s.io) naming an OTLP gRPC
// endpoint and a sampling rate. Upstream's APIServerTracing feature gate
// is gone in 1.37 (tracing is GA): the file alone turns tracing on.
//
// It differs from genericoptions.TracingOptions in two ways: the file is
// read and validated by Validate, so a bad one stops the server before it
// starts anything; and the spans go through gcp's exporting processor
// (spanBatcher), which never blocks a request and counts what it drops
// in apiserver_tracing_dropped_spans_total.
type TracingOptions struct {
	*genericoptions.TracingOptions
}

// NewTracingOptions returns options with tracing off.
func NewTracingOptions() *TracingOptions {
	return &TracingOptions{TracingOptions: genericoptions.NewTracingOptions()}
}

// AddFlags adds --tracing-config-file, as kube-apiserver names it.
func (o *TracingOptions) AddFlags(fs *pflag.FlagSet) {
	o.TracingOptions.AddFlags(fs)
	if f := fs.Lookup("tracing-config-file"); f != nil {
		f.Usage = "File with apiserver tracing configuration (TracingConfiguration, apiserver.config.k8s.io/v1): the OTLP gRPC endpoint " +
			"(default localhost:4317) and samplingRatePerMillion (default 0: only requests whose caller sampled them). " +
			"Spans the endpoint cannot take are dropped, never waited for."
	}
}

// Validate reads and validates the file; each problem names the file and
// the field.
func (o *TracingOptions) Validate() []error {
	if o == nil || o.TracingOptions == nil || o.ConfigFile == "" {
		return nil
	}
	if _, err := o.Configuration(); err != nil {
		return []error{err}
	}
	return nil
}

// Configuration returns the validated configuration of the file, nil
// when there is none.
func (o *TracingOptions) Configuration() (*tracingapi.TracingConfiguration, error) {
	if o == nil || o.TracingOptions == nil || o.ConfigFile == "" {
		return nil, nil
	}
	cfg, err := genericoptions.ReadTracingConfiguration(o.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("--tracing-config-file %s: %w", o.ConfigFile, err)
	}
	if errs := tracingapi.ValidateTracingConfiguration(cfg, utilfeature.DefaultFeatureGate, nil); len(errs) > 0 {
		return nil, fmt.Errorf("--tracing-config-file %s: %w", o.ConfigFile, errs.ToAggregate())
	}
	return cfg, nil
}

// ApplyTo sets c's tracer provider from the file, as kube-apiserver does
// (service.name "apiserver", service.instance.id the server's ID; sampled
// parent-based, at samplingRatePerMillion for requests that come without
// a sampled trace), and has the loopback client propagate the trace
// context. Without a file it leaves c's no-op provider. Call it before
// anything copies c.LoopbackClientConfig.
func (o *TracingOptions) ApplyTo(c *genericapiserver.Config) error {
	cfg, err := o.Configuration()
	if err != nil || cfg == nil {
		return err
	}
	ctx := context.Background()
	var exporterOpts []otlptracegrpc.Option
	if cfg.Endpoint != nil {
		exporterOpts = append(exporterOpts, otlptracegrpc.WithEndpoint(*cfg.Endpoint))
	}
	// The exporter dials lazily: an endpoint that is down now is not an
	// error, its spans are dropped until it answers.
	exporter, err := otlptracegrpc.New(ctx, append(exporterOpts, otlptracegrpc.WithInsecure())...)
	if err != nil {
		return fmt.Errorf("--tracing-config-file %s: %w", o.ConfigFile, err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(
		semconv.ServiceNameKey.String("apiserver"),
		semconv.ServiceInstanceIDKey.String(c.APIServerID),
	))
	if err != nil {
		return fmt.Errorf("--tracing-config-file %s: %w", o.ConfigFile, err)
	}
	sampler := sdktrace.NeverSample()
	if r := cfg.SamplingRatePerMillion; r != nil && *r > 0 {
		sampler = sdktrace.TraceIDRatioBased(float64(*r) / 1e6)
	}
	endpoint := "localhost:4317"
	if cfg.Endpoint != nil {
		endpoint = *cfg.Endpoint
	}
	c.TracerProvider = sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sampler)),
		sdktrace.WithSpanProcessor(newSpanBatcher(exporter, endpoint, defaultBatcherLimits)),
		sdktrace.WithResource(res),
	)
	if c.LoopbackClientConfig != nil {
		c.LoopbackClientConfig.Wrap(tracing.WrapperFor(c.TracerProvider))
	}
	return nil
}
