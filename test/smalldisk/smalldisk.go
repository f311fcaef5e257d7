// Package smalldisk gives tests a disk that runs out: a tmpfs of a chosen
// size, a file that fills it to a chosen free space, and how much of an
// etcd member's write-ahead log on it holds records (what a refused write
// must not grow).
package smalldisk

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory for the test, and
// unmounts it when the test ends (after whatever the test started on it
// and registered its cleanup later has stopped). It skips the test where
// mounting is not permitted (not root).
func Mount(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("a small disk needs a tmpfs: mounting one on %s: %v (run as root)", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// Free is the space df shows as available on dir's file system.
func Free(t testing.TB, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// FillTo writes dir/filler so that about free bytes are left free on dir's
// file system, and returns its path; removing it gives the space back. The
// file is written, not fallocated or truncated, so every block is taken.
func FillTo(t testing.TB, dir string, free int64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	size := Free(t, dir) - free
	if size <= 0 {
		t.Fatalf("%s has only %d bytes free, want more than %d", dir, Free(t, dir), free)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for size > 0 {
		n := min(size, int64(len(chunk)))
		if _, err := f.Write(chunk[:n]); err != nil {
			t.Fatal(err)
		}
		size -= n
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// WALWritten is how many bytes of the write-ahead logs of the etcd members
// whose data dirs are under root hold records. etcd preallocates each
// 64 MB segment, so a segment's size says nothing, but the zeros after its
// last record are not written yet.
func WALWritten(t testing.TB, root string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".wal" || filepath.Base(filepath.Dir(path)) != "wal" {
			return err
		}
		data, err := os.ReadFile(path)
		total += int64(len(bytes.TrimRight(data, "\x00")))
		return err
	})
	if err != nil || total == 0 {
		t.Fatalf("no WAL under %s: %v", root, err)
	}
	return total
}
