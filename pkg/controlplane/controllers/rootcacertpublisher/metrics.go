package rootcacertpublisher

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The families kube-controller-manager's root CA publisher serves, by the
// same names and labels, so its dashboards read gcp's: each namespace sync,
// by the HTTP code of its outcome (200 when it succeeded).
var (
	syncTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "root_ca_cert_publisher",
		Name:           "sync_total",
		Help:           "Namespaces the root CA publisher synced, by the HTTP code of the outcome.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"code"})
	syncDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "root_ca_cert_publisher",
		Name:           "sync_duration_seconds",
		Help:           "How long the root CA publisher took to sync a namespace, by the HTTP code of the outcome.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	}, []string{"code"})
	registerMetrics sync.Once
)

// recorded returns sync, recording each call's outcome and duration.
func recorded(sync func(context.Context, string) error) func(context.Context, string) error {
	registerMetrics.Do(func() { legacyregistry.MustRegister(syncTotal, syncDuration) })
	return func(ctx context.Context, name string) error {
		start := time.Now()
		err := sync(ctx, name)
		code := "200"
		if err != nil {
			code = "unknown"
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				code = strconv.Itoa(int(status.Status().Code))
			}
		}
		syncTotal.WithLabelValues(code).Inc()
		syncDuration.WithLabelValues(code).Observe(time.Since(start).Seconds())
		return err
	}
}
