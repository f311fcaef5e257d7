package allinone

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// Start prepares the data dir, starts etcd and begins serving; the
// control plane becomes ready shortly after (Ready). Everything stops when
// ctx is done or Close is called; Wait returns then. It runs three steps: the data dir and its PKI
// (preparePKI), the API server's configuration completed from them and
// the embedded etcd (startEtcd: after the configuration is built, or
// alongside it for a new member of an Ephemeral data dir), and the
// servers (run). A start that fails (a flag only the API server's
// configuration can check, etcd not starting) leaves the disk as it found
// it.
func Start(ctx context.Context, o Options, comp composition.Composition) (*ControlPlane, error) {
	if o.APIServer == nil {
		o.APIServer = newAPIServerOptions()
	}
	if o.Etcd == nil {
		o.Etcd = newEtcdConfig()
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	if err := checkNewDataDirDisk(dataDir, o.Etcd.MinFreeDisk); err != nil {
		return nil, err
	}
	// The port first: a start that cannot serve creates nothing on disk.
	// A caller may give its own listener (the test server wraps one).
	s := o.APIServer.SecureServing
	ln := s.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", net.JoinHostPort(s.BindAddress.String(), strconv.Itoa(s.BindPort))); err != nil {
			return nil, fmt.Errorf("--secure-port: %w", err)
		}
	}
	rb, err := openDataDir(dataDir, ln)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*ControlPlane, error) {
		rb.fail()
		return nil, err
	}

	d, err := preparePKI(rb, dataDir, o, serverURL(s.BindAddress.String(), ln.Addr().(*net.TCPAddr).Port))
	if err != nil {
		return fail(err)
	}
	// The storage calls the embedded etcd in this process, a client per
	// resource (pkg/controlplane/etcdstorage). A member with data starts
	// after the configuration is built, and checked against the
	// composition: a flag that makes no sense fails with its own error and
	// nothing else, and leaves the data as it was. A new member of an
	// Ephemeral data dir starts while the configuration is built (it waits
	// a heartbeat or more to elect itself), and a failed start removes it.
	var member atomic.Pointer[etcd.Handle]
	completed, etcdHealth, err := completeAPIServer(ctx, rb, o, d, ln, comp, &member)
	if err != nil {
		return fail(err)
	}
	waitMember, abandonMember := startEtcdAsync(ctx, rb, dataDir, o)
	failBeforeEtcd := func(err error) (*ControlPlane, error) {
		abandonMember()
		return fail(err)
	}
	cfg, err := apiserver.NewConfig(completed, comp)
	if err != nil {
		return failBeforeEtcd(err)
	}
	addFreeDiskCheck(cfg, &member)
	var checks etcdChecks
	if etcdHealth {
		checks = addEtcdChecks(completed.Etcd, serverConfigs(cfg)...)
	}
	var controllersCfg *controllers.Config
	if len(o.Controllers) > 0 && len(comp.Controllers) > 0 {
		if controllersCfg, err = controllersConfig(d.controllersKubeconfig, d.files, comp.Controllers, o.Controllers); err != nil {
			return failBeforeEtcd(err)
		}
	}

	store, err := waitMember()
	if err != nil {
		return fail(err)
	}
	member.Store(store)
	rb.onStop(func() { _ = store.Close() })
	// The health checks' clients close before etcd; if the server fails to
	// build, New and PrepareRun destroy the storage they built.
	if err := checks.start(); err != nil {
		return fail(err)
	}
	rb.onStop(checks.stop)
	server, err := cfg.Complete().New()
	if err != nil {
		return fail(err)
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return fail(err)
	}
	// From here the server owns its storage and its listener: it destroys
	// and closes them when it stops.
	rb.ownsListener = false

	ctx, cancel := context.WithCancel(ctx)
	cp := &ControlPlane{
		DataDir:         dataDir,
		URL:             d.url,
		AdminKubeconfig: d.adminKubeconfig,
		PKI:             d.files,
		ready:           make(chan struct{}),
		done:            make(chan struct{}),
		cancel:          cancel,
	}
	go cp.run(ctx, o, prepared, store, controllersCfg, rb.stops)
	return cp, nil
}

// rollback is what a start has made and started so far: a start that
// fails undoes all of it; one that stops runs its stops.
type rollback struct {
	// stops stop what the start started, in reverse order.
	stops []func()
	// undoNew removes files and directories this start made in a data dir
	// that was there: one refused for the Secrets in a restored etcd
	// leaves no new PKI or key where the old pki/ goes.
	undoNew []func()
	// undoDataDir removes the data dir if this start made it.
	undoDataDir func()
	// ownsListener: until the server runs, the listener is Start's to
	// close.
	ownsListener bool
}

// onStop adds f to the stops.
func (rb *rollback) onStop(f func()) { rb.stops = append(rb.stops, f) }

// removeIfNew has a failed start remove path if it is not there yet.
func (rb *rollback) removeIfNew(path string) {
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		rb.undoNew = append(rb.undoNew, func() { _ = os.RemoveAll(path) })
	}
}

// fail stops what the start started and removes what it made.
func (rb *rollback) fail() {
	runReversed(rb.stops)
	runReversed(rb.undoNew)
	rb.undoDataDir()
}

func runReversed(fs []func()) {
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// checkNewDataDirDisk refuses, before anything is written, a data dir
// whose etcd member does not exist yet on a file system with less than
// minFree free: its first start writes the API server's bootstrap objects
// (namespaces, RBAC), which a member below --min-free-disk refuses, so the
// start would otherwise fail on its first write, in etcd's words. A data
// dir with a member starts below it (reads and deletes work, writes wait
// for space).
func checkNewDataDirDisk(dataDir string, minFree int64) error {
	if _, err := os.Stat(memberDir(dataDir)); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := etcd.CheckFreeDisk(EtcdDir(dataDir), minFree); err != nil {
		return fmt.Errorf("%w; a new data dir needs that much free for its first start: free some space, or lower --min-free-disk (0 turns the check off)", err)
	}
	return nil
}
