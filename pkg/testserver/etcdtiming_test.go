package testserver

import (
	"io"
	"testing"
	"time"
)

// TestEtcdHeartbeat: the test server's member ticks every 5 ms, with the
// shortest election timeout etcd takes (five heartbeats), so a new member
// elects itself in 5–25 ms instead of gcp start's 20–100 ms; its own
// configuration check accepts it, and a test's DataDir gets it too.
func TestEtcdHeartbeat(t *testing.T) {
	t.Parallel()
	for _, fresh := range []bool{true, false} {
		ao := Options{DataDir: t.TempDir()}.allinoneOptions(0, io.Discard, fresh, nil)
		if got, want := ao.Etcd.HeartbeatInterval, 5*time.Millisecond; got != want {
			t.Errorf("fresh data dir %v: heartbeat %v, want %v", fresh, got, want)
		}
		if got, want := ao.Etcd.ElectionTimeout, 25*time.Millisecond; got != want {
			t.Errorf("fresh data dir %v: election timeout %v, want %v", fresh, got, want)
		}
		if err := ao.Etcd.Validate(); err != nil {
			t.Errorf("fresh data dir %v: etcd refuses the test server's configuration: %v", fresh, err)
		}
	}
}
