package etcd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// SnapshotDir is a directory of snapshot files named
// gcp-snapshot-<UTC time>.db (.db.gz when compressed), newest last in name
// order, as `gcp start`'s
// scheduled snapshots and `gcp snapshot` keep them (k3s's etcd-snapshot
// keeps its own the same way).
//
// A snapshot is written as <name>.part and renamed when complete, so a
// save that is killed leaves a .part file. Saves hold a shared lock on the
// directory's lock file while they write; Save and Prune remove the .part
// files when they can take it exclusively, that is when no save is
// writing one.
type SnapshotDir string

// SnapshotFile is one file of a SnapshotDir.
type SnapshotFile struct {
	// Name is the file's name in the directory; Path is its path.
	Name, Path string
	// Taken is when the snapshot was taken, from its name.
	Taken time.Time
	// Size is the file's size in bytes.
	Size int64
}

const (
	snapshotPrefix     = "gcp-snapshot-"
	snapshotSuffix     = ".db"
	snapshotTimeLayout = "20060102T150405.000Z"
	// partSuffix ends a snapshot file still being written: etcd's client
	// streams into <path>.part, and compress into <path>.gz.part.
	partSuffix = ".part"
	// snapshotLockName is the lock file of a SnapshotDir.
	snapshotLockName = ".gcp-snapshot.lock"
)

// Save takes a snapshot of the member at cfg's one endpoint into the
// directory (made 0700 if missing), named for now, and gzips it when
// compressed.
func (d SnapshotDir) Save(ctx context.Context, cfg clientv3.Config, now time.Time, compressed bool) (SnapshotFile, error) {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return SnapshotFile{}, fmt.Errorf("snapshot dir: %w", err)
	}
	unlock, err := d.lockForSave()
	if err != nil {
		return SnapshotFile{}, err
	}
	defer unlock()
	name := snapshotPrefix + now.UTC().Format(snapshotTimeLayout) + snapshotSuffix
	path := filepath.Join(string(d), name)
	if err := SaveSnapshot(ctx, cfg, path); err != nil {
		_ = os.Remove(path)
		return SnapshotFile{}, err
	}
	if compressed {
		gz, err := compress(path)
		if err != nil {
			_ = os.Remove(path)
			return SnapshotFile{}, fmt.Errorf("compress %s: %w", path, err)
		}
		path, name = gz, name+".gz"
	}
	fi, err := os.Stat(path)
	if err != nil {
		return SnapshotFile{}, err
	}
	return SnapshotFile{Name: name, Path: path, Taken: now.UTC().Truncate(time.Millisecond), Size: fi.Size()}, nil
}

// List returns the directory's snapshots, oldest first; a missing
// directory has none. Other files are not snapshots and are left alone.
func (d SnapshotDir) List() ([]SnapshotFile, error) {
	entries, err := os.ReadDir(string(d))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var files []SnapshotFile
	for _, e := range entries {
		taken, ok := snapshotTime(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		files = append(files, SnapshotFile{Name: e.Name(), Path: filepath.Join(string(d), e.Name()), Taken: taken, Size: info.Size()})
	}
	slices.SortFunc(files, func(a, b SnapshotFile) int { return a.Taken.Compare(b.Taken) })
	return files, nil
}

// snapshotTime parses the time out of a snapshot file's name.
func snapshotTime(name string) (time.Time, bool) {
	stamp, ok := strings.CutPrefix(name, snapshotPrefix)
	if !ok {
		return time.Time{}, false
	}
	stamp = strings.TrimSuffix(stamp, ".gz")
	if stamp, ok = strings.CutSuffix(stamp, snapshotSuffix); !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(snapshotTimeLayout, stamp)
	return t, err == nil
}

// Delete removes the named snapshot; a name that is not one of the
// directory's snapshots is an error, so nothing else can be removed.
func (d SnapshotDir) Delete(name string) error {
	if _, ok := snapshotTime(name); !ok || filepath.Base(name) != name {
		return fmt.Errorf("%q is not the name of a snapshot in %s (see gcp snapshot ls)", name, d)
	}
	if err := os.Remove(filepath.Join(string(d), name)); err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("no snapshot %s in %s", name, d)
		}
		return err
	}
	return nil
}

// Prune removes all but the newest keep snapshots, and the .part files of
// killed saves if no save is writing, and returns those it removed.
func (d SnapshotDir) Prune(keep int) ([]SnapshotFile, error) {
	if keep < 1 {
		return nil, fmt.Errorf("keep at least one snapshot, not %d", keep)
	}
	parts, err := d.removeParts()
	if err != nil {
		return parts, err
	}
	files, err := d.List()
	if err != nil || len(files) <= keep {
		return parts, err
	}
	old := files[:len(files)-keep]
	for i, f := range old {
		if err := os.Remove(f.Path); err != nil {
			return append(parts, old[:i]...), err
		}
	}
	return append(parts, old...), nil
}

// lockForSave takes the directory's lock for a save: exclusively if it
// can, to remove the .part files of killed saves, then shared, which other
// saves may hold too but no remover. The directory must exist.
func (d SnapshotDir) lockForSave() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(string(d), snapshotLockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("snapshot dir lock: %w", err)
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		// Not atomic: another save may take the lock exclusively in
		// between, but this one has written nothing yet.
		if _, err := d.removePartsLocked(); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("snapshot dir lock: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

// removeParts removes the .part files of killed saves and returns them,
// unless a save is writing (it holds the lock), which leaves them for the
// next Save or Prune. A missing directory has none.
func (d SnapshotDir) removeParts() ([]SnapshotFile, error) {
	f, err := os.OpenFile(filepath.Join(string(d), snapshotLockName), os.O_CREATE|os.O_RDWR, 0o600)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot dir lock: %w", err)
	}
	defer func() { _ = f.Close() }()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return nil, nil
	}
	return d.removePartsLocked()
}

// removePartsLocked removes the directory's unfinished snapshot files and
// returns them; the caller holds the lock exclusively.
func (d SnapshotDir) removePartsLocked() ([]SnapshotFile, error) {
	entries, err := os.ReadDir(string(d))
	if err != nil {
		return nil, err
	}
	var parts []SnapshotFile
	for _, e := range entries {
		done, ok := strings.CutSuffix(e.Name(), partSuffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		taken, ok := snapshotTime(done)
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return parts, err
		}
		f := SnapshotFile{Name: e.Name(), Path: filepath.Join(string(d), e.Name()), Taken: taken, Size: info.Size()}
		if err := os.Remove(f.Path); err != nil {
			return parts, fmt.Errorf("remove the unfinished snapshot %s: %w", f.Path, err)
		}
		parts = append(parts, f)
	}
	return parts, nil
}
