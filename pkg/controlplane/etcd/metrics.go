package etcd

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// serverMetricPrefixes name the families etcd's server registers with
// prometheus' default registry (its packages' init functions do, whether a
// member runs or not): etcd_* and its gRPC server's grpc_server_*. The
// default registry's other families (go_*, process_*) duplicate the legacy
// registry's own.
var serverMetricPrefixes = []string{"etcd_", "grpc_server_"}

var registerMetricsOnce sync.Once

// registerMetrics adds etcd's server metric families to component-base's
// legacy registry, which the API server's /metrics serves: `gcp start`'s
// one process serves its member's etcd_server_has_leader,
// etcd_mvcc_db_total_size_in_bytes, WAL fsync latencies and so on where a
// split deployment's `gcp etcd` serves them on --listen-metrics-urls. Only
// a process that starts a member calls it (from Start), so `gcp apiserver`
// never shows an idle etcd's zeroes, and only once: the families are
// process-wide, as etcd's counters are.
func registerMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.RawMustRegister(gatheredMetrics{prometheus.DefaultGatherer})
	})
}

// gatheredMetrics is a collector of the etcd server's families as
// prometheus' default registry gathers them. It describes nothing (an
// unchecked collector), since the families are whatever etcd registered.
type gatheredMetrics struct{ from prometheus.Gatherer }

// Describe implements prometheus.Collector.
func (gatheredMetrics) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (g gatheredMetrics) Collect(ch chan<- prometheus.Metric) {
	families, err := g.from.Gather()
	if err != nil {
		// Gather returns what it could gather beside the error.
		klog.V(2).InfoS("Gathering etcd's metrics", "err", err)
	}
	for _, f := range families {
		if !isServerFamily(f.GetName()) {
			continue
		}
		for _, m := range f.Metric {
			labels := make([]string, len(m.Label))
			for i, l := range m.Label {
				labels[i] = l.GetName()
			}
			ch <- gatheredMetric{prometheus.NewDesc(f.GetName(), f.GetHelp(), labels, nil), m}
		}
	}
}

func isServerFamily(name string) bool {
	for _, p := range serverMetricPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// gatheredMetric is one gathered series, written as it was gathered.
type gatheredMetric struct {
	desc *prometheus.Desc
	m    *dto.Metric
}

// Desc implements prometheus.Metric.
func (g gatheredMetric) Desc() *prometheus.Desc { return g.desc }

// Write implements prometheus.Metric.
func (g gatheredMetric) Write(out *dto.Metric) error {
	out.Label = g.m.Label
	out.Gauge = g.m.Gauge
	out.Counter = g.m.Counter
	out.Summary = g.m.Summary
	out.Untyped = g.m.Untyped
	out.Histogram = g.m.Histogram
	out.TimestampMs = g.m.TimestampMs
	return nil
}
