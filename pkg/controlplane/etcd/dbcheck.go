package etcd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
)

// CorruptDatabaseError is CheckDatabase's error, and so Start's when the
// member's database file fails it: etcd would crash on it with a panic from bbolt (or a
// SIGBUS), so the member is not started and the file is left as it is.
type CorruptDatabaseError struct {
	// Path is the database file.
	Path string
	// Detail says what is wrong with it.
	Detail string
	// Restore is the command that makes a new data dir from a snapshot;
	// empty means `gcp etcd snapshot restore`. `gcp start` sets its own.
	Restore string
}

// Error says which file is corrupt and what to do about it, in one line.
func (e *CorruptDatabaseError) Error() string {
	restore := e.Restore
	if restore == "" {
		restore = "gcp etcd snapshot restore"
	}
	return fmt.Sprintf("the etcd database %s is corrupt (%s); restore it from a snapshot with %s", e.Path, e.Detail, restore)
}

// DatabasePath is where a member keeps its database in its data dir.
func DatabasePath(dataDir string) string { return filepath.Join(dataDir, "member", "snap", "db") }

// CheckDatabase opens the bbolt database at path (a member's, see
// DatabasePath, or a snapshot file) read-only and walks it as
// etcd's start would, so that a corrupt file is an error here instead of a
// panic (or SIGBUS) in one of etcd's goroutines, where nothing can recover
// it. It never writes to the file. A file that does not exist or is empty
// is left to etcd, which makes a new database there.
//
// The walk visits every branch and leaf page of every bucket and checks
// that keys are in order, without reading values: it costs about what
// etcd's own open costs (bbolt rebuilds etcd's free list by walking the
// same pages, and etcd then reads every key to rebuild its index);
// docs/operations.md has the numbers.
func CheckDatabase(path string) error {
	fi, err := os.Stat(path)
	if os.IsNotExist(err) || (err == nil && fi.Size() == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	detail := make(chan string, 1)
	go func() {
		// A page bbolt trusts may lie past the end of the file or the
		// mapping: reading it faults, and SetPanicOnFault makes that a
		// panic this goroutine recovers, not a crash.
		debug.SetPanicOnFault(true)
		defer func() {
			if r := recover(); r != nil {
				detail <- fmt.Sprint(r)
			}
		}()
		detail <- walkDatabase(path, fi.Size())
	}()
	if d := <-detail; d != "" {
		return &CorruptDatabaseError{Path: path, Detail: d}
	}
	return nil
}

// walkDatabase is CheckDatabase's work; it returns what is wrong, or "".
// It may panic on a corrupt page.
func walkDatabase(path string, size int64) string {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		// Another process has it open for writing: not ours to check.
		return ""
	}
	if err != nil {
		return err.Error()
	}
	defer func() { _ = db.Close() }()
	var problem string
	err = db.View(func(tx *bolt.Tx) error {
		// The meta page says how far the file goes; a file cut short of
		// it (a full disk, a partial copy) would fault on the missing pages.
		if need := tx.Size(); need > size {
			problem = fmt.Sprintf("truncated: %d bytes, its pages need %d", size, need)
			return nil
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if p := walkBucket(b); p != "" {
				problem = fmt.Sprintf("bucket %q: %s", name, p)
				return errStopWalk
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, errStopWalk) {
		return err.Error()
	}
	return problem
}

// errStopWalk ends a walk that found a problem.
var errStopWalk = errors.New("stop")

// walkBucket visits every key of b and its nested buckets in order.
func walkBucket(b *bolt.Bucket) string {
	var prev []byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Sprintf("keys out of order: %x after %x", k, prev)
		}
		prev = k
		if v == nil {
			if nested := b.Bucket(k); nested != nil {
				if p := walkBucket(nested); p != "" {
					return fmt.Sprintf("bucket %q: %s", k, p)
				}
			}
		}
	}
	return ""
}
