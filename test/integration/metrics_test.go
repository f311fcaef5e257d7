package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/gcp-project/gcp/pkg/testserver"
)

// TestClientGoMetrics: the server's /metrics has client-go's families, as
// kube-apiserver's and kube-controller-manager's have: its loopback and
// controllers' clients (rest_client_*) and work queues (workqueue_*), which
// dashboards of upstream's components read.
func TestClientGoMetrics(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Controllers: []string{"*"}})
	body, err := s.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range []string{"rest_client_requests_total", "rest_client_request_duration_seconds", "workqueue_depth", "workqueue_adds_total"} {
		if !strings.Contains(string(body), "\n# TYPE "+family+" ") {
			t.Errorf("no %s in /metrics", family)
		}
	}
}
