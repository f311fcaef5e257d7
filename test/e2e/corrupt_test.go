package e2e

import (
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestCorruptDatabaseIsOneLine: a corrupt etcd database, in several
// shapes, makes gcp start, gcp etcd and gcp snapshot save fail with one
// line that names the file and the restore command, exit 1, and leaves the
// file as it was (etcd's bbolt would crash with a panic or a SIGBUS). A
// snapshot streamed from such a database, whose checksum matches, is
// refused by restore and status the same way, and the restore leaves
// nothing behind.
func TestCorruptDatabaseIsOneLine(t *testing.T) {
	t.Parallel()
	good := t.TempDir()
	a := startAllInOne(t, good)
	for i := range 30 {
		a.kubectl("create", "configmap", "c"+strings.Repeat("x", i), "--from-literal=k="+strings.Repeat("v", 2000))
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(good, "etcd", "member", "snap", "db")
	pristine, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	root, size := keyBucketRoot(t, db)

	for _, shape := range []struct {
		name    string
		corrupt func([]byte) []byte
	}{
		{"zeroed page", func(b []byte) []byte { clear(b[root*4096 : (root+1)*4096]); return b }},
		{"garbage page", func(b []byte) []byte { garbage(b[root*4096 : (root+1)*4096]); return b }},
		{"truncated", func(b []byte) []byte { return b[:size/2] }},
		{"garbage meta pages", func(b []byte) []byte { garbage(b[:2*4096]); return b }},
		{"not a database", func([]byte) []byte { return []byte(strings.Repeat("not bbolt\n", 1000)) }},
	} {
		t.Run(shape.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if out, err := exec.Command("cp", "-a", good+"/.", dir).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			bad := filepath.Join(dir, "etcd", "member", "snap", "db")
			data := shape.corrupt(append([]byte(nil), pristine...))
			if err := os.WriteFile(bad, data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"start", "--data-dir", dir, "--secure-port", "0"},
				{"etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", "unix://" + filepath.Join(dir, "e.sock")},
				{"snapshot", "save", "--data-dir", dir},
			} {
				restore := "gcp snapshot restore"
				if args[0] == "etcd" {
					restore = "gcp etcd snapshot restore"
				}
				out, code := runGCPWithin(t, time.Minute, args...)
				if code != 1 || strings.Count(strings.TrimSpace(out), "\n") != 0 ||
					!strings.Contains(out, "the etcd database "+bad+" is corrupt (") || !strings.Contains(out, "restore it from a snapshot with "+restore) {
					t.Errorf("gcp %s on a database with a %s: exit %d, want 1 and one line naming the file and %s:\n%s", args[0], shape.name, code, restore, out)
				}
				if now, _ := os.ReadFile(bad); sha256.Sum256(now) != sha256.Sum256(data) {
					t.Fatalf("gcp %s changed the corrupt database", args[0])
				}
			}
			if shape.name == "truncated" || shape.name == "not a database" {
				return // no snapshot streams such a file
			}
			// A snapshot of the corrupt database, as a member streams it:
			// the checksum it carries is of the corrupt bytes.
			sum := sha256.Sum256(data)
			snap := filepath.Join(t.TempDir(), "corrupt-db.db")
			if err := os.WriteFile(snap, append(data, sum[:]...), 0o600); err != nil {
				t.Fatal(err)
			}
			newDir := filepath.Join(t.TempDir(), "new")
			for _, args := range [][]string{
				{"snapshot", "restore", snap, "--data-dir", newDir},
				{"etcd", "snapshot", "restore", snap, "--data-dir", newDir},
				{"etcd", "snapshot", "status", snap},
			} {
				out, code := runGCPWithin(t, time.Minute, args...)
				if code != 1 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, snap+" is not a usable etcd snapshot: its database is corrupt (") {
					t.Errorf("gcp %s of a snapshot of a database with a %s: exit %d, want 1 and one line:\n%s", strings.Join(args[:2], " "), shape.name, code, out)
				}
				if _, err := os.Stat(newDir); !os.IsNotExist(err) {
					t.Fatalf("a failed restore left %s behind (%v)", newDir, err)
				}
			}
		})
	}
}

// keyBucketRoot returns the page that etcd's key bucket starts at (a page
// every read of the database goes through) and the size the database's
// pages need.
func keyBucketRoot(t *testing.T, path string) (int, int) {
	t.Helper()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	var root, size int
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil {
			return errors.New("no key bucket")
		}
		root, size = int(b.Root()), int(tx.Size())
		return nil
	})
	if err != nil || root == 0 {
		t.Fatalf("key bucket root %d: %v", root, err)
	}
	return root, size
}

// garbage fills b with random bytes.
func garbage(b []byte) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// runGCPWithin is runGCP with a deadline: a command that should fail at
// once but serves instead is killed and reported.
func runGCPWithin(t *testing.T, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gcpBinary, args...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Errorf("gcp %s still running after %v:\n%s", strings.Join(args, " "), timeout, out)
		return string(out), -1
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		t.Fatalf("running gcp %v: %v", args, err)
		return "", -1
	}
}
