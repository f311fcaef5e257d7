package allinone

import (
	"context"
	"errors"
	"sync"
	"testing"

	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// TestEtcdChecksClose: the checks' clients are open when start returns
// and closed when stop returns, so Start can stop etcd right after them
// with no client left to redial its socket (TestFailedStart saw the
// library's checks, which dial and close in goroutines of their own,
// still dialling after a failed start had stopped etcd).
func TestEtcdChecksClose(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	member, err := startEtcd(context.Background(), dataDir, Options{Etcd: newEtcdConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = member.Close() }()
	sc := storagebackend.Config{Transport: storagebackend.TransportConfig{ServerList: []string{etcd.UnixSocketURL(EtcdSocket(dataDir))}}}
	health := newEtcdCheck(sc, storagebackend.DefaultHealthcheckTimeout)
	checks := etcdChecks{health, newEtcdCheck(sc, storagebackend.DefaultReadinessTimeout)}

	if err := health.run(nil); !errors.Is(err, errNotConnected) {
		t.Errorf("before start: %v, want %v", err, errNotConnected)
	}
	if err := checks.start(); err != nil {
		t.Fatal(err)
	}
	for i, c := range checks {
		if err := c.run(nil); err != nil {
			t.Errorf("check %d after start: %v", i, err)
		}
		if c.prober == nil {
			t.Errorf("check %d has no client after start", i)
		}
	}
	// Within the rate limit the last answer stands, for checks that come at
	// once too (/healthz and /readyz run the same check): one probes, the
	// others answer with what it found.
	concurrent := newEtcdCheck(sc, storagebackend.DefaultHealthcheckTimeout)
	if err := concurrent.open(); err != nil {
		t.Fatal(err)
	}
	defer concurrent.close()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := concurrent.run(nil); err != nil && !errors.Is(err, errNotConnected) {
				t.Errorf("concurrent check: %v", err)
			}
		})
	}
	wg.Wait()
	if err := concurrent.run(nil); err != nil {
		t.Errorf("check after the concurrent ones: %v", err)
	}
	checks.stop()
	for i, c := range checks {
		if c.prober != nil {
			t.Errorf("check %d still holds its client after stop", i)
		}
		if err := c.run(nil); !errors.Is(err, errChecksClosed) {
			t.Errorf("check %d after stop: %v, want %v", i, err, errChecksClosed)
		}
	}
	// A check opened after it was stopped closes its client at once.
	if err := health.open(); err != nil {
		t.Fatal(err)
	}
	if health.prober != nil {
		t.Error("a check opened after stop kept its client")
	}
}
