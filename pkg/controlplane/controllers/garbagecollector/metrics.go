package garbagecollector

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// resourcesSyncErrors is kube-controller-manager's counter of the garbage
// collector's failures to follow discovery (a group that did not answer, a
// resource it could not watch), by the same name, so alerts and dashboards
// written for upstream's work on gcp's.
var (
	resourcesSyncErrors = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "garbagecollector_controller",
		Name:           "resources_sync_error_total",
		Help:           "Times the garbage collector could not follow discovery: a group that did not answer or a resource left unwatched.",
		StabilityLevel: metrics.ALPHA,
	})
	registerMetrics sync.Once
)

func registerControllerMetrics() {
	registerMetrics.Do(func() { legacyregistry.MustRegister(resourcesSyncErrors) })
}
