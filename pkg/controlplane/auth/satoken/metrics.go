package satoken

import (
	"sync"

	"k8s.io/component-base/metrics"
)

// validTokens is kube-apiserver's serviceaccount_valid_tokens_total, by the
// same name: bound service account tokens that authenticated a request.
// (Its legacy and stale counters have nothing to count here: gcp issues
// no legacy Secret-based tokens and no tokens with a warn-after time.)
var (
	validTokens = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "serviceaccount",
		Name:           "valid_tokens_total",
		Help:           "Bound service account tokens that authenticated a request.",
		StabilityLevel: metrics.BETA,
	})
	registerMetrics sync.Once
)
