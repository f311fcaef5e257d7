package etcd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// SnapshotDir is a directory of snapshot files named
// gcp-snapshot-<UTC time>.db (.db.gz when compressed), newest last in name
// order, as `gcp start`'s
// scheduled snapshots and `gcp snapshot` keep them (k3s's etcd-snapshot
// keeps its own the same way).
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
)

// Save takes a snapshot of the member at cfg's one endpoint into the
// directory (made 0700 if missing), named for now, and gzips it when
// compressed.
func (d SnapshotDir) Save(ctx context.Context, cfg clientv3.Config, now time.Time, compressed bool) (SnapshotFile, error) {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return SnapshotFile{}, fmt.Errorf("snapshot dir: %w", err)
	}
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

// Prune removes all but the newest keep snapshots and returns those it
// removed.
func (d SnapshotDir) Prune(keep int) ([]SnapshotFile, error) {
	if keep < 1 {
		return nil, fmt.Errorf("keep at least one snapshot, not %d", keep)
	}
	files, err := d.List()
	if err != nil || len(files) <= keep {
		return nil, err
	}
	old := files[:len(files)-keep]
	for _, f := range old {
		if err := os.Remove(f.Path); err != nil {
			return nil, err
		}
	}
	return old, nil
}
