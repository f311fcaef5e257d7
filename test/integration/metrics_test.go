package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/gcp-project/gcp/pkg/testserver"
	"github.com/gcp-project/gcp/test/poll"
)

// TestClientGoMetrics: the server's /metrics has client-go's families, as
// kube-apiserver's and kube-controller-manager's have: its loopback and
// controllers' clients (rest_client_*) and work queues (workqueue_*), which
// dashboards of upstream's components read; and the controllers' own that
// kube-controller-manager has too (the garbage collector's discovery
// errors, the root CA publisher's syncs), client-go's informers' (named
// factories only) and the build, feature gate and version info.
func TestClientGoMetrics(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Controllers: []string{"*"}})
	// The publisher's families have series once it has synced a namespace.
	var body []byte
	poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "root_ca_cert_publisher_sync_total on /metrics", func() bool {
		var err error
		body, err = s.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
		return err == nil && strings.Contains(string(body), "\nroot_ca_cert_publisher_sync_total{")
	})
	for _, family := range []string{"rest_client_requests_total", "rest_client_request_duration_seconds", "workqueue_depth", "workqueue_adds_total",
		"garbagecollector_controller_resources_sync_error_total", "root_ca_cert_publisher_sync_total", "root_ca_cert_publisher_sync_duration_seconds",
		"informer_queued_items", "informer_store_resource_version", "kubernetes_build_info", "kubernetes_feature_enabled", "version_info"} {
		if !strings.Contains(string(body), "\n# TYPE "+family+" ") {
			t.Errorf("no %s in /metrics", family)
		}
	}
}

// TestEtcdServerMetrics: the in-process etcd member's own families are on the
// API server's /metrics, as `gcp etcd` serves them on --listen-metrics-urls,
// so the alerts of docs/operations.md (no leader, leader changes, database
// size against quota, WAL fsync latency) work on `gcp start` too.
func TestEtcdServerMetrics(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	body, err := s.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range []string{"etcd_server_has_leader", "etcd_server_leader_changes_seen_total", "etcd_mvcc_db_total_size_in_bytes",
		"etcd_server_quota_backend_bytes", "etcd_disk_wal_fsync_duration_seconds", "etcd_disk_backend_commit_duration_seconds"} {
		if !strings.Contains(string(body), "\n# TYPE "+family+" ") {
			t.Errorf("no %s in /metrics", family)
		}
	}
	if !strings.Contains(string(body), "\netcd_server_has_leader 1\n") {
		t.Errorf("/metrics does not say etcd has a leader")
	}
	// The process' own families once, not again from prometheus' default registry.
	if n := strings.Count(string(body), "\n# TYPE go_goroutines "); n != 1 {
		t.Errorf("go_goroutines %d times in /metrics", n)
	}
}

// TestCertificateExpirationMetric: /metrics says when the serving
// certificate and the client CA the server reads expire, as the
// certificate-expiry alert of docs/operations.md needs.
func TestCertificateExpirationMetric(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	body, err := s.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for use, file := range map[string]string{"serving": s.PKI.ServingCert, "client-ca": s.PKI.CACert} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		certs, err := certutil.ParseCertsPEM(data)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("\ngcp_certificate_expiration_timestamp_seconds{file=%q,use=%q} %g\n", file, use, float64(certs[0].NotAfter.Unix()))
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %q", strings.TrimSpace(want))
		}
	}
}
