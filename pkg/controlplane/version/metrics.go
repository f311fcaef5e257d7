package version

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	// buildInfo is kubernetes_build_info, as upstream's components serve it
	// (k8s.io/component-base/metrics/prometheus/version), labelled with
	// gcp's version (Get) instead of component-base's, which only
	// Kubernetes' own -ldflags set.
	buildInfo = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "kubernetes_build_info",
		Help:           "Always 1, labelled by the Kubernetes version the binary implements (major, minor, git_version), its commit, tree state, build date, Go version, compiler and platform.",
		StabilityLevel: metrics.BETA,
	}, []string{"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform"})
	registerOnce sync.Once
)

// RegisterMetrics serves kubernetes_build_info from component-base's
// legacy registry; the API server and the controllers call it, once per
// process whatever the number of calls.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(buildInfo)
		i := Get()
		buildInfo.WithLabelValues(i.Major, i.Minor, i.GitVersion, i.GitCommit, i.GitTreeState, i.BuildDate, i.GoVersion, i.Compiler, i.Platform).Set(1)
	})
}
