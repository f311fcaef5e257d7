package etcd

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
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
	return fmt.Sprintf("the etcd database %s is corrupt (%s); restore it from a snapshot with %s", e.Path, e.Detail, restoreCommand(e.Restore))
}

// restoreCommand is restore, or `gcp etcd snapshot restore` if it is empty:
// the command an error about a member's files names.
func restoreCommand(restore string) string {
	if restore == "" {
		return "gcp etcd snapshot restore"
	}
	return restore
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

// EachLiveKey calls fn, in key order, with every key under prefix that a
// member would serve from the database at path (a snapshot file, or a
// member's database while no member has it open; none there has no keys)
// and its value: the
// latest revision of each key not deleted since. Check the file with
// CheckDatabase first. It reads etcd's key bucket directly, every
// revision of every key, but decodes only those under prefix.
func EachLiveKey(path, prefix string, fn func(key, value []byte) error) error {
	// No database yet (or an empty file, which etcd makes one in): no keys.
	if fi, err := os.Stat(path); os.IsNotExist(err) || (err == nil && fi.Size() == 0) {
		return nil
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer func() { _ = db.Close() }()
	live := map[string][]byte{}
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil {
			return nil
		}
		// Keys are revisions, oldest first: the last one seen of each key
		// is what the member serves, unless it is a tombstone.
		return b.ForEach(func(rev, v []byte) error {
			if !keyHasPrefix(v, prefix) {
				return nil
			}
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				return fmt.Errorf("revision %x: %w", rev, err)
			}
			if mvcc.IsTombstone(rev) {
				delete(live, string(kv.Key))
			} else {
				live[string(kv.Key)] = kv.Value
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	for _, k := range slices.Sorted(maps.Keys(live)) {
		if err := fn([]byte(k), live[k]); err != nil {
			return err
		}
	}
	return nil
}

// keyHasPrefix says whether the mvccpb.KeyValue encoded in v has a key
// under prefix, reading only its first field (the key, as etcd writes it)
// instead of decoding it all; anything else is decoded to be sure.
func keyHasPrefix(v []byte, prefix string) bool {
	num, typ, n := protowire.ConsumeTag(v)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return true
	}
	key, m := protowire.ConsumeBytes(v[n:])
	return m < 0 || bytes.HasPrefix(key, []byte(prefix))
}
