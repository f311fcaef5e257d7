package allinone

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// While the member refuses writes for low disk, scheduled snapshots onto
// the same file system are skipped: each is as large as the database and
// would eat the room etcd keeps. No etcd runs here, so a snapshot that
// was not skipped would fail and log instead; the test counts attempts
// through lowDisk and finds nothing written.
func TestScheduledSnapshotSkippedWhileDiskLow(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	dir := etcd.SnapshotDir(DefaultSnapshotDir(dataDir))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	checks := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		snapshotEvery(ctx, filepath.Join(dataDir, "no.sock"), dir, time.Millisecond, 5, false, EtcdDir(dataDir), func() error {
			if checks++; checks == 3 {
				cancel()
			}
			return errors.New("low")
		})
	}()
	<-done
	if _, err := os.Stat(string(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a snapshot was attempted while the disk was low: %s exists (%v)", dir, err)
	}
}

// sameFileSystem looks through paths not made yet to their parents.
func TestSameFileSystem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if !sameFileSystem(filepath.Join(dir, "a", "b"), dir) {
		t.Error("a path not made yet is not on its parent's file system")
	}
	if sameFileSystem("/proc/self", dir) {
		t.Error("/proc is on the file system of a temporary directory")
	}
}

// TestEtcdDefaultDataDirIsStarts: `gcp etcd` keeps its data where `gcp
// start` keeps its member's by default (etcd.DefaultDataDir), which the
// etcd package, below this one, cannot derive.
func TestEtcdDefaultDataDirIsStarts(t *testing.T) {
	if got := EtcdDir(DefaultDataDir); got != etcd.DefaultDataDir {
		t.Errorf("EtcdDir(DefaultDataDir) = %q, etcd.DefaultDataDir = %q", got, etcd.DefaultDataDir)
	}
}
