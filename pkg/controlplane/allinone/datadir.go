package allinone

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

// openDataDir makes the data dir if it is not there and locks it; the
// rollback it returns undoes that and closes ln, which Start has opened.
func openDataDir(dataDir string, ln net.Listener) (*rollback, error) {
	rb := &rollback{ownsListener: true}
	closeListener := func() {
		if rb.ownsListener {
			_ = ln.Close()
		}
	}
	undoDataDir, err := makeDataDir(dataDir)
	if err != nil {
		closeListener()
		return nil, fmt.Errorf("data dir: %w", err)
	}
	lockPath := filepath.Join(dataDir, lockName)
	_, statErr := os.Lstat(lockPath)
	unlock, err := lockDataDir(dataDir)
	if err != nil {
		// Another gcp may hold a data dir this start just created too.
		closeListener()
		return nil, err
	}
	rb.undoDataDir = undoDataDir
	rb.onStop(closeListener)
	rb.onStop(unlock)
	// A failed start in a data dir that held other files leaves it as it
	// was, without a lock file of its own.
	if os.IsNotExist(statErr) {
		rb.undoNew = append(rb.undoNew, func() { _ = os.Remove(lockPath) })
	}
	return rb, nil
}

// dataDirPKI is what the PKI step makes in the data dir.
type dataDirPKI struct {
	dir                   string
	files                 *pki.Files
	url                   string
	adminKubeconfig       string
	controllersKubeconfig string
}

// preparePKI makes the data dir's certificates, if missing, for o's
// TLSSANs, and its kubeconfigs for the server at url.
func preparePKI(rb *rollback, dataDir string, o Options, url string) (*dataDirPKI, error) {
	d := &dataDirPKI{
		dir:                   filepath.Join(dataDir, "pki"),
		url:                   url,
		adminKubeconfig:       filepath.Join(dataDir, AdminKubeconfigName),
		controllersKubeconfig: filepath.Join(dataDir, ControllersKubeconfigName),
	}
	rb.removeIfNew(d.dir)
	po := pki.Options{Dir: d.dir, ServingSANs: o.TLSSANs, NoSync: o.Ephemeral}
	files, err := pki.Ensure(po)
	if err != nil {
		return nil, err
	}
	d.files = files
	rb.removeIfNew(d.adminKubeconfig)
	if err := po.WriteKubeconfig(d.adminKubeconfig, url, files.CACert, files.AdminCert, files.AdminKey, "gcp"); err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	// The controllers' kubeconfig is written even without controllers here,
	// for a `gcp controllers` run against this control plane.
	rb.removeIfNew(d.controllersKubeconfig)
	if err := po.WriteKubeconfig(d.controllersKubeconfig, url, files.CACert, files.ControllersCert, files.ControllersKey, "gcp"); err != nil {
		return nil, fmt.Errorf("controllers kubeconfig: %w", err)
	}
	return d, nil
}

// makeDataDir makes dir, and any parents missing, 0700. undo puts the
// disk back as it was: it removes the topmost directory made, with
// everything written below it since, or empties dir if it was there and
// empty (a systemd StateDirectory, say); a dir that held anything is left
// alone.
func makeDataDir(dir string) (undo func(), err error) {
	var created string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			break
		}
		created = d
		if filepath.Dir(d) == d {
			break
		}
	}
	undo = func() {}
	switch entries, err := os.ReadDir(dir); {
	case created != "":
		undo = func() { _ = os.RemoveAll(created) }
	case err == nil && len(entries) == 0:
		undo = func() {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
	err = os.MkdirAll(dir, 0o700)
	if err == nil {
		err = os.Chmod(dir, 0o700)
	}
	if err != nil {
		undo()
		return nil, err
	}
	return undo, nil
}

// lockDataDir takes an exclusive lock on the data dir, so a second gcp on
// the same directory fails at once instead of corrupting the store.
// errDataDirInUse is lockDataDir's error when another process holds it.
var errDataDirInUse = errors.New("in use by another gcp process")

// lockName is the lock file's name in the data dir.
const lockName = "gcp.lock"

func lockDataDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s: %w", dir, errDataDirInUse)
		}
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	return func() { _ = f.Close() }, nil
}
