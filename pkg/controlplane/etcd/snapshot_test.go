package etcd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSnapshotDirSaveRestore saves snapshots of a running member into a
// SnapshotDir, prunes and deletes them, and restores one into a data dir
// that a new member then serves with every key.
func TestSnapshotDirSaveRestore(t *testing.T) {
	t.Parallel()
	h := startT(t, DefaultConfig(filepath.Join(t.TempDir(), "etcd")))
	c := newClient(t, h.ClientURLs(), nil)
	put(t, c, "/kept", "yes")

	dir := SnapshotDir(filepath.Join(t.TempDir(), "snapshots"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	var saved []SnapshotFile
	for i := range 3 {
		// The newest is compressed.
		f, err := dir.Save(ctx, clientv3.Config{Endpoints: h.ClientURLs()}, base.Add(time.Duration(i)*time.Hour), i == 2)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(f.Path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("snapshot %s: %v, mode %v", f.Path, err, fi.Mode())
		}
		saved = append(saved, f)
	}
	if fi, err := os.Stat(string(dir)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("snapshot dir: %v, mode %v", err, fi.Mode())
	}
	// Files that are not snapshots are neither listed nor removed.
	other := filepath.Join(string(dir), "notes.txt")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	removed, err := dir.Prune(2)
	if err != nil || len(removed) != 1 || removed[0].Name != saved[0].Name {
		t.Fatalf("Prune(2) removed %v, %v; want the oldest", removed, err)
	}
	for _, bad := range []string{"notes.txt", "../etcd", "gcp-snapshot-x.db", saved[0].Name} {
		if err := dir.Delete(bad); err == nil {
			t.Errorf("Delete(%q) succeeded", bad)
		}
	}
	if err := dir.Delete(saved[1].Name); err != nil {
		t.Fatal(err)
	}
	list, err := dir.List()
	if err != nil || len(list) != 1 || list[0].Name != saved[2].Name || !list[0].Taken.Equal(base.Add(2*time.Hour)) ||
		!strings.HasSuffix(list[0].Name, ".db.gz") {
		t.Fatalf("List after prune and delete: %+v, %v", list, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("a file that is not a snapshot went: %v", err)
	}

	if st, err := InspectSnapshot(list[0].Path); err != nil || st.TotalKey == 0 {
		t.Fatalf("status of the compressed snapshot: %+v, %v", st, err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if err := RestoreSnapshot(RestoreConfig{Snapshot: list[0].Path, DataDir: restored, RevisionBump: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := RestoreSnapshot(RestoreConfig{Snapshot: list[0].Path, DataDir: restored}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("restore into a used data dir: %v", err)
	}
	h2 := startT(t, DefaultConfig(restored))
	c2 := newClient(t, h2.ClientURLs(), nil)
	if got := get(t, c2, "/kept"); got != "yes" {
		t.Fatalf("restored /kept = %q", got)
	}
	resp, err := c2.Get(ctx, "/kept")
	if err != nil || resp.Header.Revision < 1000 {
		t.Fatalf("revision after a bump of 1000: %v, %v", resp, err)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 180256: "176.0 KiB", 3 << 20: "3.0 MiB", 1536 << 20: "1.5 GiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSnapshotDirRemovesPartsOfKilledSaves plants the .part files that a
// save killed while streaming (.db.part) or compressing (.db.gz.part)
// leaves: Prune leaves them while another save holds the directory (it
// may be writing one of them), and the next Save or Prune with no save
// running removes them. Other files stay.
func TestSnapshotDirRemovesPartsOfKilledSaves(t *testing.T) {
	t.Parallel()
	h := startT(t, DefaultConfig(filepath.Join(t.TempDir(), "etcd")))
	dir := SnapshotDir(filepath.Join(t.TempDir(), "snapshots"))
	if err := os.MkdirAll(string(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	plant := func(names ...string) {
		t.Helper()
		for _, name := range names {
			if err := os.WriteFile(filepath.Join(string(dir), name), []byte("half a snapshot"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	exists := func(name string) bool {
		_, err := os.Lstat(filepath.Join(string(dir), name))
		return err == nil
	}
	streamed, compressed, other := "gcp-snapshot-20261124T120000.000Z.db.part", "gcp-snapshot-20261124T130000.000Z.db.gz.part", "notes.part"
	// A save in another process holds the lock while it writes: Prune
	// cannot tell its .part from those of killed saves.
	unlock, err := dir.lockForSave()
	if err != nil {
		t.Fatal(err)
	}
	plant(streamed, compressed, other)
	if removed, err := dir.Prune(1); err != nil || len(removed) != 0 || !exists(streamed) || !exists(compressed) {
		t.Fatalf("Prune while a save runs removed %v, %v; want nothing", removed, err)
	}
	unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := dir.Save(ctx, clientv3.Config{Endpoints: h.ClientURLs()}, time.Date(2026, 11, 24, 14, 0, 0, 0, time.UTC), true)
	if err != nil {
		t.Fatal(err)
	}
	if exists(streamed) || exists(compressed) {
		t.Fatalf("Save left the .part files of killed saves")
	}
	if !exists(other) || !exists(f.Name) {
		t.Fatalf("Save removed a file that is not a snapshot's part, or did not save")
	}

	plant(streamed)
	removed, err := dir.Prune(1)
	if err != nil || len(removed) != 1 || removed[0].Name != streamed || exists(streamed) {
		t.Fatalf("Prune(1) removed %+v, %v; want %s", removed, err, streamed)
	}
	list, err := dir.List()
	if err != nil || len(list) != 1 || list[0].Name != f.Name {
		t.Fatalf("List: %+v, %v; want only %s (no lock file, no parts)", list, err, f.Name)
	}
	if err := dir.Delete(snapshotLockName); err == nil {
		t.Fatal("Delete removed the directory's lock file")
	}
}
