package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestStartRefusesACorruptDatabase: a member whose database has a zeroed
// page, is cut short or has no valid meta page is not started (etcd's
// bbolt would panic, or fault, in a goroutine of its own and take the
// process down): Start returns a *CorruptDatabaseError naming the file,
// which is left as it was. test/e2e's TestCorruptDatabaseIsOneLine runs
// the same shapes through the binary.
func TestStartRefusesACorruptDatabase(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "etcd")
	h := startT(t, DefaultConfig(dataDir))
	c := newClient(t, h.ClientURLs(), nil)
	for i := range 200 {
		put(t, c, fmt.Sprintf("/registry/things/%03d", i), strings.Repeat("v", 500))
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	path := DatabasePath(dataDir)
	pristine, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var root, size int
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.View(func(tx *bolt.Tx) error {
		root, size = int(tx.Bucket([]byte("key")).Root()), int(tx.Size())
		return nil
	})
	_ = db.Close()
	if err := CheckDatabase(path); err != nil {
		t.Fatalf("checkDatabase of a sound database: %v", err)
	}

	for name, corrupt := range map[string]func([]byte) []byte{
		"zeroed page":   func(b []byte) []byte { clear(b[root*4096 : (root+1)*4096]); return b },
		"truncated":     func(b []byte) []byte { return b[:size/2] },
		"no meta pages": func(b []byte) []byte { copy(b, bytes.Repeat([]byte{0xa5}, 2*4096)); return b },
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, corrupt(bytes.Clone(pristine)), 0o600); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			h, err := Start(context.Background(), DefaultConfig(dataDir))
			if err == nil {
				_ = h.Close()
				t.Fatal("Start succeeded")
			}
			t.Log(err)
			var c *CorruptDatabaseError
			if !errors.As(err, &c) || c.Path != path || !strings.Contains(err.Error(), "restore it from a snapshot with gcp etcd snapshot restore") {
				t.Fatalf("Start: %v, want a *CorruptDatabaseError for %s", err, path)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("Start changed the corrupt database")
			}
		})
	}
}

// TestEachLiveKey: what EachLiveKey reads from a database file is what the
// member served: the latest value of each key under the prefix, none of
// the deleted ones (whose older revisions and tombstones are still in the
// file) and nothing outside the prefix.
func TestEachLiveKey(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "etcd")
	h := startT(t, DefaultConfig(dataDir))
	c := newClient(t, h.ClientURLs(), nil)
	put(t, c, "/registry/secrets/ns/a", "old")
	put(t, c, "/registry/secrets/ns/a", "new")
	put(t, c, "/registry/secrets/ns/deleted", "x")
	put(t, c, "/registry/secretsx", "outside")
	put(t, c, "/registry/configmaps/ns/c", "outside")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Delete(ctx, "/registry/secrets/ns/deleted"); err != nil {
		t.Fatal(err)
	}
	put(t, c, "/registry/secrets/ns/b", "b")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := EachLiveKey(DatabasePath(dataDir), "/registry/secrets/", func(k, v []byte) error {
		got = append(got, string(k)+"="+string(v))
		return nil
	})
	if want := []string{"/registry/secrets/ns/a=new", "/registry/secrets/ns/b=b"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("EachLiveKey: %v, %v; want %v", got, err, want)
	}
	if err := EachLiveKey(filepath.Join(t.TempDir(), "none"), "/", func(k, v []byte) error { return errors.New("called") }); err != nil {
		t.Fatalf("EachLiveKey of no database: %v", err)
	}
}

// TestStartRefusesALostWAL: a member whose write-ahead log was cut short
// (etcd repairs the torn end and starts) would never be ready, its new
// entries taken for ones its database applied; Start says so within
// seconds, naming the log, instead of waiting out its ready timeout.
func TestStartRefusesALostWAL(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "etcd")
	cfg := DefaultConfig(dataDir)
	h := startT(t, cfg)
	c := newClient(t, h.ClientURLs(), nil)
	for i := range 300 {
		put(t, c, fmt.Sprintf("/registry/things/%03d", i), strings.Repeat("v", 100))
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	segments, err := filepath.Glob(filepath.Join(walDir(dataDir), "*.wal"))
	if err != nil || len(segments) == 0 {
		t.Fatalf("no WAL segments (%v)", err)
	}
	for _, s := range segments {
		if err := os.Truncate(s, 5000); err != nil {
			t.Fatal(err)
		}
	}
	cfg.ReadyTimeout = 2 * time.Minute
	began := time.Now()
	h, err = Start(context.Background(), cfg)
	if err == nil {
		_ = h.Close()
		t.Fatal("Start succeeded")
	}
	t.Logf("after %s: %v", time.Since(began), err)
	var lost *LostWALError
	if !errors.As(err, &lost) || lost.Dir != walDir(dataDir) || lost.Committed >= lost.Applied ||
		!strings.Contains(err.Error(), "restore the data dir from a snapshot with gcp etcd snapshot restore") {
		t.Fatalf("Start: %v, want a *LostWALError for %s", err, walDir(dataDir))
	}
	if took := time.Since(began); took > time.Minute {
		t.Errorf("Start took %s to say so", took)
	}
}
