package testserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
)

// TestOwnDataDirIsNotSynced: a server in a data dir of its own, which
// Stop removes, writes etcd without a single fsync (etcd's
// --unsafe-no-fsync, allinone.Options.Ephemeral), while one in the caller's
// data dir syncs as `gcp start` does. It reads etcd's count of WAL
// fsyncs, a metric of the whole process: it runs alone (no t.Parallel, so
// the parallel tests wait), and the caller's-dir server shows that the
// count moves at all.
func TestOwnDataDirIsNotSynced(t *testing.T) {
	for _, c := range []struct {
		name    string
		dataDir string
		synced  bool
	}{
		{"own temporary data dir", "", false},
		{"the caller's data dir", t.TempDir(), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Start(t, Options{DataDir: c.dataDir})
			before := walFsyncs(t, s)
			for i := range 5 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i)}}
				if _, err := s.Client.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			after := walFsyncs(t, s)
			if synced := after > before; synced != c.synced {
				t.Errorf("etcd's WAL fsyncs went from %d to %d over five writes; want synced=%v", before, after, c.synced)
			}
		})
	}
}

// walFsyncs is etcd_disk_wal_fsync_duration_seconds_count, read from s's
// etcd member over its unix socket.
func walFsyncs(t *testing.T, s *Server) int {
	t.Helper()
	socket := allinone.EtcdSocket(s.DataDir)
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://etcd/metrics")
	if err != nil {
		t.Fatalf("etcd metrics: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "etcd_disk_wal_fsync_duration_seconds_count "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("etcd metrics: %q", sc.Text())
			}
			return n
		}
	}
	t.Fatalf("etcd metrics (%s): no etcd_disk_wal_fsync_duration_seconds_count", resp.Status)
	return 0
}
