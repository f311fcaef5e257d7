package allinone

import (
	"net/http"
	"path/filepath"
	"sync/atomic"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// startEtcd starts the data dir's etcd member, configured by o.Etcd, on
// the data dir's socket; its database was checked by completeAPIServer,
// with the data dir locked since.
func startEtcd(dataDir string, o Options) (*etcd.Handle, error) {
	cfg := *o.Etcd
	cfg.DataDir = EtcdDir(dataDir)
	cfg.ListenClientURLs = []string{etcd.UnixSocketURL(EtcdSocket(dataDir))}
	cfg.AdvertiseClientURLs = cfg.ListenClientURLs
	cfg.DatabaseChecked = true
	cfg.UnsafeNoFsync = cfg.UnsafeNoFsync || o.NoSync
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
