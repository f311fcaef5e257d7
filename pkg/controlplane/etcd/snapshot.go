package etcd

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"
	clientsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	etcdutlsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// SnapshotStatus describes a snapshot file: etcd's storage version, the
// revision it was taken at, its keys and its size.
type SnapshotStatus = etcdutlsnapshot.Status

// SaveSnapshot streams a snapshot of the one member cfg.Endpoints names
// into path (mode 0600: it holds every secret), which must not exist yet.
// It does not read the file back: InspectSnapshot does, at the cost of
// walking the whole database.
func SaveSnapshot(ctx context.Context, cfg clientv3.Config, path string) error {
	if len(cfg.Endpoints) != 1 {
		return fmt.Errorf("a snapshot is taken from one member; got %d endpoints", len(cfg.Endpoints))
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s exists; a snapshot never overwrites a file", path)
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if _, err := clientsnapshot.SaveWithVersion(ctx, cfg.Logger, cfg, path); err != nil {
		return fmt.Errorf("snapshot of %s: %w", cfg.Endpoints[0], err)
	}
	return os.Chmod(path, 0o600)
}

// InspectSnapshot checks a snapshot file's integrity and returns its
// status; a truncated or corrupt file is an error, never a crash. A
// gzip-compressed snapshot is read through a decompressed copy.
func InspectSnapshot(path string) (SnapshotStatus, error) {
	plain, cleanup, err := uncompressed(path)
	if err != nil {
		return SnapshotStatus{}, err
	}
	defer cleanup()
	return inspect(plain, path)
}

// inspect is InspectSnapshot of an uncompressed file, named as name.
func inspect(path, name string) (st SnapshotStatus, err error) {
	// bbolt maps the file into memory and trusts its page table: a
	// truncated file makes it read past the end (SIGBUS, which no recover
	// catches). So the checksum etcd appends to every snapshot is checked
	// before bbolt opens the file, and then the database in it, which
	// may have been corrupt when the snapshot streamed it.
	if err := verifyChecksum(path); err != nil {
		return st, err
	}
	if err := checkSnapshotDatabase(path, name); err != nil {
		return st, err
	}
	defer func() {
		// bbolt may panic on a file that is not a database at all.
		if r := recover(); r != nil {
			err = fmt.Errorf("%s is not an etcd snapshot: %v", path, r)
		}
	}()
	st, err = etcdutlsnapshot.NewV3(zap.NewNop()).Status(path)
	if err != nil {
		return st, fmt.Errorf("%s is not a usable etcd snapshot: %w", path, err)
	}
	return st, nil
}

// RestoreConfig says where and as which member a snapshot is restored.
type RestoreConfig struct {
	// Snapshot is the snapshot file.
	Snapshot string
	// DataDir is the new member's data dir; it must not exist or be empty.
	DataDir string
	// Name is the new member's name; empty means DefaultName.
	Name string
	// InitialCluster is the new cluster, name=peerURL,...; empty means
	// this member alone on its PeerURLs.
	InitialCluster string
	// PeerURLs are this member's peer URLs in InitialCluster; empty
	// means the placeholder URL of a member without peers (gcp start's).
	PeerURLs []string
	// Verify, when set, is called before anything is written with every
	// key under VerifyPrefix that a member restored from the snapshot
	// would serve, and its value, in key order; its first error fails the
	// restore. `gcp snapshot restore` checks with it that the data dir's
	// encryption configuration reads the snapshot's Secrets.
	VerifyPrefix string
	Verify       func(key, value []byte) error
	// RevisionBump, when positive, raises the restored revision by that
	// much and marks everything before it compacted, so that watchers and
	// informers that saw later revisions before the restore relist instead
	// of missing changes, as etcdutl's --bump-revision --mark-compacted.
	RevisionBump uint64
}

// RestoreSnapshot makes a data dir from a snapshot, as `etcdutl snapshot
// restore` does: the member forgets the old cluster's members and peer
// URLs, keeps every key, and starts as a new cluster of InitialCluster.
// The snapshot is checked first; on any error nothing is left behind.
func RestoreSnapshot(cfg RestoreConfig) error {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if entries, err := os.ReadDir(cfg.DataDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("data dir %s is not empty; restore makes a new one", cfg.DataDir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	plain, cleanup, err := uncompressed(cfg.Snapshot)
	if err != nil {
		return err
	}
	defer cleanup()
	name := cfg.Snapshot
	cfg.Snapshot = plain
	// The checksum first, so that etcdutl's bbolt never maps a truncated
	// file; etcdutl checks it again as it copies. Then the database: a
	// member's corrupt database streams into a snapshot with a checksum
	// that matches, and etcdutl's bbolt would panic on it.
	if err := verifyChecksum(cfg.Snapshot); err != nil {
		return err
	}
	if err := checkSnapshotDatabase(cfg.Snapshot, name); err != nil {
		return err
	}
	if cfg.Verify != nil {
		if err := EachLiveKey(cfg.Snapshot, cfg.VerifyPrefix, cfg.Verify); err != nil {
			return err
		}
	}
	if len(cfg.PeerURLs) == 0 {
		cfg.PeerURLs = []string{noPeerURL}
	}
	if cfg.InitialCluster == "" {
		cfg.InitialCluster = cfg.Name + "=" + cfg.PeerURLs[0]
	}
	// Restore beside the data dir and rename it into place, so a failure
	// half-way leaves nothing.
	parent := filepath.Dir(filepath.Clean(cfg.DataDir))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(cfg.DataDir)+".restoring-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	out := filepath.Join(tmp, "data")
	err = etcdutlsnapshot.NewV3(zap.NewNop()).Restore(etcdutlsnapshot.RestoreConfig{
		SnapshotPath:        cfg.Snapshot,
		Name:                cfg.Name,
		OutputDataDir:       out,
		PeerURLs:            cfg.PeerURLs,
		InitialCluster:      cfg.InitialCluster,
		InitialClusterToken: "etcd-cluster",
		RevisionBump:        cfg.RevisionBump,
		MarkCompacted:       cfg.RevisionBump > 0,
	})
	if err != nil {
		return fmt.Errorf("restore %s: %w", cfg.Snapshot, err)
	}
	if err := os.Chmod(out, 0o700); err != nil {
		return err
	}
	_ = os.Remove(cfg.DataDir) // an empty one; rename needs it gone
	return os.Rename(out, cfg.DataDir)
}

// checkSnapshotDatabase is checkDatabase of the database in a snapshot
// file at path, named as name in its error.
func checkSnapshotDatabase(path, name string) error {
	err := CheckDatabase(path)
	if c := (*CorruptDatabaseError)(nil); errors.As(err, &c) {
		return fmt.Errorf("%s is not a usable etcd snapshot: its database is corrupt (%s)", name, c.Detail)
	}
	return err
}

// verifyChecksum checks the SHA-256 of the database that etcd appends to
// a snapshot it streams (the file's size is then 32 bytes past a multiple
// of 512).
func verifyChecksum(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if size < 512+sha256.Size || size%512 != sha256.Size {
		return fmt.Errorf("%s is not a usable etcd snapshot: %d bytes is not the size of a snapshot with its checksum (truncated, or not from `snapshot save`)", path, size)
	}
	h := sha256.New()
	if _, err := io.CopyN(h, f, size-sha256.Size); err != nil {
		return err
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, want); err != nil {
		return err
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return fmt.Errorf("%s is not a usable etcd snapshot: its checksum does not match (corrupt or truncated)", path)
	}
	return nil
}

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// uncompressed returns path itself, or for a gzip-compressed snapshot a
// decompressed copy (0600, in the same directory) and the cleanup that
// removes it.
func uncompressed(path string) (string, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = f.Close() }()
	head := make([]byte, len(gzipMagic))
	if n, _ := io.ReadFull(f, head); n < len(head) || !bytes.Equal(head, gzipMagic) {
		return path, func() {}, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", nil, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", nil, fmt.Errorf("%s is not a usable etcd snapshot: %w", path, err)
	}
	out, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".plain-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.Remove(out.Name()) }
	_, err = io.Copy(out, zr)
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("%s is not a usable etcd snapshot: decompressing: %w", path, err)
	}
	return out.Name(), cleanup, nil
}

// compress replaces the snapshot at path with path+".gz" and returns it.
// It writes path+".gz.part" and renames it when complete, so that a
// compression cut short never looks like a snapshot.
func compress(path string) (string, error) {
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = in.Close() }()
	gz := path + ".gz"
	if _, err := os.Lstat(gz); err == nil {
		return "", fmt.Errorf("%s exists; a snapshot never overwrites a file", gz)
	}
	part := gz + partSuffix
	out, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	if closeErr := zw.Close(); err == nil {
		err = closeErr
	}
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(part, gz)
	}
	if err != nil {
		_ = os.Remove(part)
		return "", err
	}
	return gz, os.Remove(path)
}

// DefaultRevisionBump is how far a restore (`gcp etcd snapshot restore`, `gcp snapshot restore`) raises the
// restored revision unless --bump-revision says otherwise: far past
// anything a watcher saw before the restore, so that every informer
// relists instead of waiting for revisions it thinks it has seen.
const DefaultRevisionBump = 1_000_000_000

// HumanBytes writes a size in bytes for people: 512 B, 176.0 KiB, 1.5 GiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
