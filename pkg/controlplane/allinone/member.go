package allinone

import (
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// startEtcd starts the data dir's etcd member on its socket, its database
// checked by completeAPIServer, with the data dir locked since.
func startEtcd(dataDir string, o Options) (*etcd.Handle, error) {
	cfg := etcd.DefaultConfig(EtcdDir(dataDir))
	cfg.ListenClientURLs = []string{etcd.UnixSocketURL(EtcdSocket(dataDir))}
	cfg.AdvertiseClientURLs = cfg.ListenClientURLs
	cfg.QuotaBackendBytes = o.QuotaBackendBytes
	cfg.MinFreeDisk = o.MinFreeDisk
	cfg.DatabaseChecked = true
	// One member with no peers: a restart elects itself after a random 1 to
	// 10 heartbeats, 0.1–1 s with etcd's 100 ms, which was most of a warm
	// start's time and spread (docs/performance.md). With 20 ms and an
	// election timeout of five of them (etcd's minimum ratio) it is
	// 20–100 ms. Faster ticks cost idle CPU: 1.6 % of a core at 50 ms, 1.9 %
	// at 20 ms, 2.6 % at 10 ms, which gains little more. A member with no
	// peers cannot lose its leadership to a slow tick, so the short timeout
	// risks nothing; etcd's request timeout becomes 5.2 s (7 s).
	cfg.HeartbeatInterval, cfg.ElectionTimeout = 20*time.Millisecond, 100*time.Millisecond
	return startMember(cfg)
}

// addFreeDiskCheck makes readiness name low disk, which the embedded
// member alone sees: the alarm checks only say NOSPACE, whose recovery is
// another.
func addFreeDiskCheck(cfg *apiserver.Config, member *atomic.Pointer[etcd.Handle]) {
	freeDisk := healthz.NamedCheck("etcd-free-disk", func(*http.Request) error {
		if m := member.Load(); m != nil {
			return m.LowDisk()
		}
		return nil
	})
	for _, c := range serverConfigs(cfg) {
		c.AddReadyzChecks(freeDisk)
	}
}

// serverConfigs are the generic configurations of cfg's servers.
func serverConfigs(cfg *apiserver.Config) []*genericapiserver.Config {
	configs := []*genericapiserver.Config{cfg.Generic}
	for _, c := range []*genericapiserver.Config{apiExtensionsConfig(cfg), aggregatorConfig(cfg)} {
		if c != nil {
			configs = append(configs, c)
		}
	}
	return configs
}

// snapshotDir is where scheduled snapshots go.
func snapshotDir(dataDir string, o Options) etcd.SnapshotDir {
	dir := DefaultSnapshotDir(dataDir)
	if o.SnapshotDir != "" {
		dir, _ = filepath.Abs(o.SnapshotDir)
	}
	return etcd.SnapshotDir(dir)
}
