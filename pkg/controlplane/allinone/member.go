package allinone

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// startEtcd starts the data dir's etcd member, configured by o.Etcd, on
// the data dir's socket; its database was checked by completeAPIServer,
// with the data dir locked since.
func startEtcd(ctx context.Context, dataDir string, o Options) (*etcd.Handle, error) {
	cfg := *o.Etcd
	cfg.DataDir = EtcdDir(dataDir)
	cfg.ListenClientURLs = []string{etcd.UnixSocketURL(EtcdSocket(dataDir))}
	cfg.AdvertiseClientURLs = cfg.ListenClientURLs
	cfg.DatabaseChecked = true
	cfg.UnsafeNoFsync = cfg.UnsafeNoFsync || o.Ephemeral
	m, err := startMember(ctx, cfg)
	if err == nil {
		klog.InfoS("etcd is ready", "dataDir", dataDir, "socket", EtcdSocket(dataDir))
	}
	return m, err
}

// startEtcdAsync starts the data dir's etcd member now if it is new (no
// member dir yet; rb then removes the etcd dir if the start fails) and
// o.Ephemeral, or else when wait is called. wait returns the member once
// it is ready; abandon, for a start that fails before it needs the
// member, stops a member already starting.
func startEtcdAsync(ctx context.Context, rb *rollback, dataDir string, o Options) (wait func() (*etcd.Handle, error), abandon func()) {
	if _, err := os.Lstat(memberDir(dataDir)); !o.Ephemeral || !os.IsNotExist(err) {
		return func() (*etcd.Handle, error) { return startEtcd(ctx, dataDir, o) }, func() {}
	}
	rb.removeIfNew(EtcdDir(dataDir))
	type started struct {
		store *etcd.Handle
		err   error
	}
	done := make(chan started, 1)
	go func() {
		store, err := startEtcd(ctx, dataDir, o)
		done <- started{store, err}
	}()
	wait = func() (*etcd.Handle, error) {
		s := <-done
		return s.store, s.err
	}
	abandon = func() {
		if s := <-done; s.store != nil {
			_ = s.store.Close()
		}
	}
	return wait, abandon
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
