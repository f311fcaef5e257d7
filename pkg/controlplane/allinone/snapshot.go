package allinone

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// EtcdDir is the embedded etcd member's data dir in a data dir.
func EtcdDir(dataDir string) string { return filepath.Join(dataDir, "etcd") }

// memberDir is where etcd keeps the member's WAL and database in EtcdDir:
// it exists once the member has started at least once.
func memberDir(dataDir string) string { return filepath.Join(EtcdDir(dataDir), "member") }

// EtcdSocket is the unix socket the embedded member serves on while `gcp
// start` runs; only the data dir's owner reaches it.
func EtcdSocket(dataDir string) string { return filepath.Join(dataDir, "etcd.sock") }

// DefaultSnapshotDir is where snapshots of a data dir go unless
// Options.SnapshotDir says otherwise.
func DefaultSnapshotDir(dataDir string) string { return filepath.Join(dataDir, "snapshots") }

// startMember starts a data dir's etcd member.
func startMember(ctx context.Context, cfg etcd.Config) (*etcd.Handle, error) {
	m, err := etcd.Start(ctx, cfg)
	if err != nil {
		return nil, restoreWith(err)
	}
	return m, nil
}

// restoreWith names a corrupt database or a lost write-ahead log as it is,
// with the restore command of a gcp start data dir, and any other error of
// its member as etcd's.
func restoreWith(err error) error {
	if c := (*etcd.CorruptDatabaseError)(nil); errors.As(err, &c) {
		c.Restore = "gcp snapshot restore"
		return c
	}
	if l := (*etcd.LostWALError)(nil); errors.As(err, &l) {
		l.Restore = "gcp snapshot restore"
		return l
	}
	return fmt.Errorf("etcd: %w", err)
}

// SaveSnapshot takes a snapshot of a data dir's etcd into dir. While `gcp
// start` runs it streams one from the member through its socket, without
// downtime; otherwise it runs the member, on a socket of its own, for as
// long as the snapshot takes, holding the data dir so no `gcp start`
// begins meanwhile.
// compressed gzips it.
func SaveSnapshot(ctx context.Context, dataDir string, dir etcd.SnapshotDir, compressed bool) (etcd.SnapshotFile, error) {
	if _, err := os.Stat(memberDir(dataDir)); err != nil {
		return etcd.SnapshotFile{}, fmt.Errorf("data dir %s has no etcd data: %w", dataDir, err)
	}
	unlock, err := lockDataDir(dataDir)
	if errors.Is(err, errDataDirInUse) {
		return dir.Save(ctx, clientv3.Config{Endpoints: []string{etcd.UnixSocketURL(EtcdSocket(dataDir))}, DialTimeout: 10 * time.Second}, time.Now(), compressed)
	}
	if err != nil {
		return etcd.SnapshotFile{}, err
	}
	defer unlock()
	member, err := startMember(ctx, etcd.DefaultConfig(EtcdDir(dataDir)))
	if err != nil {
		return etcd.SnapshotFile{}, err
	}
	defer func() { _ = member.Close() }()
	return dir.Save(ctx, clientv3.Config{Endpoints: member.ClientURLs(), DialTimeout: 10 * time.Second}, time.Now(), compressed)
}

// RestoreSnapshot makes dataDir's etcd from a snapshot, for `gcp start
// --data-dir dataDir`: a new member that keeps every object and forgets
// where the snapshot came from. dataDir may hold a PKI (copied from the
// old one, so that its certificates and service account tokens stay
// valid), but no etcd data. A snapshot with a Secret that the encryption
// configuration in dataDir's pki/ cannot read (none there: only plain
// Secrets) is refused, with the Secret and the key named. revisionBump is
// as etcd.RestoreConfig's.
func RestoreSnapshot(snapshot, dataDir string, revisionBump uint64) (err error) {
	// A snapshot that is not there creates no data dir.
	if _, err := os.Stat(snapshot); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	// A failed restore into a data dir it made leaves nothing behind.
	if _, statErr := os.Stat(dataDir); os.IsNotExist(statErr) {
		defer func() {
			if err != nil {
				_ = os.RemoveAll(dataDir)
			}
		}()
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	unlock, err := lockDataDir(dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	// The Secrets in the snapshot must be readable with the encryption
	// configuration in dataDir's pki/, the one gcp start will use: it is
	// not in the snapshot (docs/security.md says why).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	config := filepath.Join(dataDir, "pki", EncryptionConfigName)
	readable, err := secretsReadable(ctx, secretsPrefix, config, config)
	if err != nil {
		return err
	}
	return etcd.RestoreSnapshot(etcd.RestoreConfig{Snapshot: snapshot, DataDir: EtcdDir(dataDir), RevisionBump: revisionBump,
		VerifyPrefix: secretsPrefix, Verify: readable})
}

// snapshotEvery takes a snapshot into dir every interval until ctx is
// done, keeping the newest retain; compressed gzips them. It skips a
// snapshot while lowDisk says the member refuses writes for disk space
// and dir is on the file system of etcdDir: a snapshot is as large as the
// database and would take the room that etcd keeps from running out.
func snapshotEvery(ctx context.Context, socket string, dir etcd.SnapshotDir, interval time.Duration, retain int, compressed bool,
	etcdDir string, lowDisk func() error) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			if err := lowDisk(); err != nil && sameFileSystem(string(dir), etcdDir) {
				klog.ErrorS(err, "Skipped a scheduled etcd snapshot: the disk it would go to is low", "dir", dir)
				continue
			}
			saveCtx, cancel := context.WithTimeout(ctx, max(interval, time.Minute))
			f, err := dir.Save(saveCtx, clientv3.Config{Endpoints: []string{etcd.UnixSocketURL(socket)}, DialTimeout: 10 * time.Second}, now, compressed)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					klog.ErrorS(err, "Scheduled etcd snapshot failed", "dir", dir)
				}
				continue
			}
			removed, err := dir.Prune(retain)
			if err != nil {
				klog.ErrorS(err, "Pruning etcd snapshots failed", "dir", dir)
			}
			klog.InfoS("Saved etcd snapshot", "path", f.Path, "size", f.Size, "pruned", len(removed))
		}
	}
}

// sameFileSystem reports whether a and b (or, where they do not exist
// yet, their nearest existing parents) are on one file system; true when
// that cannot be told.
func sameFileSystem(a, b string) bool {
	device := func(p string) (uint64, bool) {
		for {
			fi, err := os.Stat(p)
			if err == nil {
				st, ok := fi.Sys().(*syscall.Stat_t)
				if !ok {
					return 0, false
				}
				return uint64(st.Dev), true
			}
			parent := filepath.Dir(p)
			if parent == p {
				return 0, false
			}
			p = parent
		}
	}
	da, okA := device(a)
	db, okB := device(b)
	return !okA || !okB || da == db
}
