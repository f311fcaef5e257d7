package pki

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// exists reports whether path exists; errors other than "not found" (a
// permission problem, say) are returned rather than taken as absence, so a
// file that is merely unreadable is never replaced.
func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

// writeFileAtomic replaces path with data and mode by writing a temporary
// file in the same directory, syncing it and renaming it over path, so a
// crash leaves either the old file or the new one, never half of one.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	return writer{}.write(path, data, mode)
}

// writer writes the PKI's files. noSync (Options.NoSync) skips the file's
// and the directory's fsync: the rename still replaces the file whole for
// every reader, but a machine crash may leave it empty.
type writer struct{ noSync bool }

// write is writeFileAtomic, without the syncs when w.noSync.
func (w writer) write(path string, data []byte, mode os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if !w.noSync {
		if err := tmp.Sync(); err != nil {
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if !w.noSync {
		syncDir(dir)
	}
	return nil
}

// syncDir makes a rename in dir durable. It is best effort: some platforms
// and file systems cannot sync a directory, and the rename itself has
// already happened.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// tightenMode removes permission bits of path that mode does not grant.
func tightenMode(path string, mode os.FileMode) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if perm := info.Mode().Perm(); perm&^mode != 0 {
		if err := os.Chmod(path, perm&mode); err != nil {
			return fmt.Errorf("restricting permissions of %s: %w", path, err)
		}
	}
	return nil
}
