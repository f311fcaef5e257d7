package workarounds

import (
	"slices"

	"k8s.io/apiserver/pkg/server/healthz"
)

// WithoutCheck returns checks without the one named name.
//
// k8s.io/apiserver's etcd options add their "etcd" check to /livez as well
// as to /readyz, so an etcd that has lost its quorum made every API server
// fail liveness, and a kubelet or systemd restarted healthy processes into
// the same outage, each restart then waiting for etcd to start at all.
// Liveness is the process's own health; an etcd that cannot answer is for
// readiness, which takes the server out of a load balancer and puts it
// back without a restart (kubernetes/kubernetes#111290 asks upstream for
// the same; /readyz/etcd and /healthz/etcd still answer for etcd alone).
// test/e2e TestEtcdQuorumLoss holds it.
func WithoutCheck(checks []healthz.HealthChecker, name string) []healthz.HealthChecker {
	return slices.DeleteFunc(slices.Clone(checks), func(c healthz.HealthChecker) bool { return c.Name() == name })
}
