package etcd

import (
	"fmt"
	"path/filepath"
	"testing"

	"go.etcd.io/etcd/server/v3/embed"
)

// A private member (DefaultConfig) takes a raft snapshot every
// PrivateSnapshotCount writes, so it keeps a short raft log in memory; a
// member of a `gcp etcd` cluster keeps etcd's defaults.
func TestPrivateMemberSnapshotsOften(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etcd")
	cfg := DefaultConfig(dir)
	cfg.UnsafeNoFsync = true
	c := inProcessT(t, startT(t, cfg))
	for i := range PrivateSnapshotCount + 50 {
		put(t, c, fmt.Sprintf("k%d", i), "v")
	}
	snaps, err := filepath.Glob(filepath.Join(dir, "member", "snap", "*.snap"))
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) == 0 {
		t.Fatalf("no raft snapshot after %d writes", PrivateSnapshotCount+50)
	}

	ec, err := NewOptions().Config.embedConfig()
	if err != nil {
		t.Fatal(err)
	}
	defaults := embed.NewConfig()
	if ec.SnapshotCount != defaults.SnapshotCount || ec.SnapshotCatchUpEntries != defaults.SnapshotCatchUpEntries {
		t.Fatalf("gcp etcd keeps %d entries between snapshots and %d to catch up, want etcd's %d and %d",
			ec.SnapshotCount, ec.SnapshotCatchUpEntries, defaults.SnapshotCount, defaults.SnapshotCatchUpEntries)
	}
}
