package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLostWALIsOneLine: a data dir whose etcd write-ahead log was cut
// short (etcd repairs the torn end, then waits for ever to register the
// member, its new raft entries taken for ones the database applied) makes
// gcp start and gcp etcd fail within seconds with a line naming the log and
// the restore command (after etcd's warnings about the log it repaired),
// and exit 1, instead of hanging until the ready
// timeout and past SIGTERM.
func TestLostWALIsOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := startAllInOne(t, dir)
	for i := range 20 {
		a.kubectl("create", "configmap", "c"+strings.Repeat("x", i), "--from-literal=k=v")
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	wal := filepath.Join(dir, "etcd", "member", "wal")
	segments, err := filepath.Glob(filepath.Join(wal, "*.wal"))
	if err != nil || len(segments) == 0 {
		t.Fatalf("no WAL segments in %s (%v)", wal, err)
	}
	for _, s := range segments {
		if err := os.Truncate(s, 5000); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"start", "--data-dir", dir, "--secure-port", "0"},
		{"etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", "unix://" + filepath.Join(dir, "e.sock")},
	} {
		restore := "gcp snapshot restore"
		if args[0] == "etcd" {
			restore = "gcp etcd snapshot restore"
		}
		began := time.Now()
		out, code := runGCPWithin(t, time.Minute, args...)
		took := time.Since(began)
		// Before it, etcd's own warnings about the log it repaired.
		last := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
		if code != 1 || !strings.Contains(last, "the etcd write-ahead log in "+wal+" ends before what the database has applied") ||
			!strings.Contains(last, "restore the data dir from a snapshot with "+restore) {
			t.Errorf("gcp %s with a lost WAL: exit %d, want 1 and a last line naming %s and %s:\n%s", args[0], code, wal, restore, out)
		}
		if took > 30*time.Second {
			t.Errorf("gcp %s took %s to give up", args[0], took)
		}
		t.Logf("gcp %s: %s after %s", args[0], strings.TrimSpace(last), took)
	}
}
