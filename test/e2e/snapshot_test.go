package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// TestStartSnapshotRestore is docs/operations.md's backup and restore of
// `gcp start`: a snapshot taken online while a writer writes, restored
// into a new data dir (with the old pki/ copied in) served on another
// address and port, as on another machine; every create acknowledged before the snapshot is there, and the
// restored control plane's controllers run. A snapshot taken while gcp
// start is stopped works too.
func TestStartSnapshotRestore(t *testing.T) {
	t.Parallel()
	oldDir := t.TempDir()
	a := startAllInOne(t, oldDir)
	a.kubectl("create", "namespace", "snap")
	w := startWriter(t, a.kubeconfig(), "", "snap", 0, 100000)
	w.waitMore(50, 60*time.Second)
	before := w.count()
	out, code := runGCP(t, "snapshot", "save", "--data-dir", oldDir)
	w.stop()
	if code != 0 || !strings.Contains(out, "Saved ") {
		t.Fatalf("gcp snapshot save (online): exit %d\n%s", code, out)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	// Offline: gcp start is not running.
	mustGCP(t, "snapshot", "save", "--data-dir", oldDir)
	out, _ = runGCP(t, "snapshot", "ls", "--data-dir", oldDir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("gcp snapshot ls, want two snapshots:\n%s", out)
	}
	online := filepath.Join(oldDir, "snapshots", strings.Fields(lines[1])[0])

	// A snapshot that fails its checksum, restored into a new data dir,
	// leaves nothing behind.
	data, err := os.ReadFile(online)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	corrupt := filepath.Join(t.TempDir(), "corrupt.db")
	if err := os.WriteFile(corrupt, data, 0o600); err != nil {
		t.Fatal(err)
	}
	failedDir := filepath.Join(t.TempDir(), "failed")
	if out, code := runGCP(t, "snapshot", "restore", corrupt, "--data-dir", failedDir); code != 1 {
		t.Fatalf("restore of a corrupt snapshot: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(failedDir); !os.IsNotExist(err) {
		t.Fatalf("a failed restore left %s behind: %v", failedDir, err)
	}

	newDir := filepath.Join(t.TempDir(), "new")
	if err := os.MkdirAll(newDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(oldDir, "pki"), filepath.Join(newDir, "pki")).CombinedOutput(); err != nil {
		t.Fatalf("copy pki: %v\n%s", err, out)
	}
	if out, code := runGCP(t, "snapshot", "restore", online, "--data-dir", newDir); code != 0 || !strings.Contains(out, "with the PKI in it") {
		t.Fatalf("gcp snapshot restore: exit %d\n%s", code, out)
	}
	// A second restore into the same data dir is refused.
	if out, code := runGCP(t, "snapshot", "restore", online, "--data-dir", newDir); code == 0 || !strings.Contains(out, "not empty") {
		t.Fatalf("restore into a data dir with etcd data: exit %d\n%s", code, out)
	}
	// Another address and port, as on another machine.
	b := startAllInOne(t, newDir, "--bind-address", "127.0.0.2", "--tls-san", "127.0.0.2")
	w.verifyFirst(b.kubeconfig(), "", before)
	b.kubectl("create", "namespace", "after-restore")
	b.eventually(t, "default service account in a namespace made after the restore", 30*time.Second,
		func(_ string, err error) bool { return err == nil }, "get", "serviceaccount", "default", "-n", "after-restore")
}

// TestScheduledSnapshots: gcp start --snapshot-interval takes snapshots on
// its own, gzipped with --snapshot-compress, and keeps exactly the newest
// --snapshot-retention; gcp etcd snapshot status reads them.
func TestScheduledSnapshots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startAllInOne(t, dir, "--snapshot-interval", "300ms", "--snapshot-retention", "2", "--snapshot-compress")
	snapshots := filepath.Join(dir, "snapshots")
	var seen []string // every snapshot seen, in name (= time) order
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		entries, err := os.ReadDir(snapshots)
		if err != nil {
			return err
		}
		var kept []string
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".db.gz") {
				kept = append(kept, e.Name())
				if !slices.Contains(seen, e.Name()) {
					seen = append(seen, e.Name())
				}
			}
		}
		slices.Sort(seen)
		switch {
		case len(seen) < 4:
			return fmt.Errorf("%d distinct snapshots seen so far: %v", len(seen), seen)
		case !slices.Equal(kept, seen[len(seen)-2:]):
			return fmt.Errorf("kept %v, want the newest two of %v", kept, seen)
		}
		return nil
	})
	// The newest snapshot may be pruned while it is read: then read the
	// next newest.
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		out, _ := runGCP(t, "snapshot", "ls", "--data-dir", dir)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		newest := strings.Fields(lines[len(lines)-1])[0]
		if out, code := runGCP(t, "etcd", "snapshot", "status", filepath.Join(snapshots, newest)); code != 0 || !strings.Contains(out, "keys") {
			return fmt.Errorf("gcp etcd snapshot status of a compressed snapshot: exit %d\n%s", code, out)
		}
		return nil
	})
}
