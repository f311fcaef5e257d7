// Package etcd runs an etcd member inside the gcp process, as a handle:
// Start it, wait on Ready, watch Err, and Close it.
//
// `gcp start` embeds one private member whose only client listener is a unix
// socket in its 0700 data dir (see DefaultConfig and UnixSocketURL); `gcp
// etcd` runs members of a TLS-secured cluster. This is the only package that
// imports the etcd server.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/client/pkg/v3/logutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/logging"
)

// lockFileName is the file in the data dir that Start locks, so a second
// member on the same data dir fails at once instead of blocking on etcd's
// own database lock.
const lockFileName = "gcp-etcd.lock"

// ErrRemoved is why a member stops once it has been removed from its
// cluster (`gcp etcd member remove`): its data dir can never rejoin, so it
// is not worth starting again on it.
var ErrRemoved = errors.New("this member was removed from its etcd cluster")

// RemovedExitCode is the exit code of `gcp etcd` once its member has been
// removed (ErrRemoved): the systemd unit `gcp manifests systemd --role etcd`
// writes does not restart it (RestartPreventExitStatus). 78 is EX_CONFIG of
// sysexits.h: the machine is not configured to be what it was started as.
const RemovedExitCode = 78

// removedError says that the member of dataDir was removed, and what
// brings the machine back, if e's member was removed; otherwise it is nil.
func removedError(e *embed.Etcd, dataDir string) error {
	id := e.Server.MemberID()
	if !e.Server.IsIDRemoved(uint64(id)) {
		return nil
	}
	return fmt.Errorf("%w (member ID %s), and its data dir %s cannot rejoin it; to bring this machine back, "+
		"add it again (gcp etcd member add) and start it on an empty data dir", ErrRemoved, id, dataDir)
}

// Handle is a running etcd member. Its methods are safe for concurrent use.
type Handle struct {
	etcd       *embed.Etcd
	lock       *fileutil.LockedFile
	clientURLs []string
	dataDir    string

	ready       chan struct{}
	errc        chan error
	stop        chan struct{} // closed when Close starts
	monitorDone chan struct{}
	disk        *diskWatch    // nil without Config.MinFreeDisk
	diskDone    chan struct{} // closed when the disk watch has stopped

	closeOnce sync.Once
	closeErr  error
}

// Start validates cfg, prepares the data dir, checks the member's database
// unless cfg.DatabaseChecked (a corrupt one is a *CorruptDatabaseError, and
// the file is left as it is) and starts the member. It
// returns once the member serves clients, or with an error if it fails or
// is not ready within cfg.ReadyTimeout (one whose write-ahead log lost what
// its database applied fails within seconds, a *LostWALError), or when ctx
// is done first (a signal during a start). After an error the member is
// stopped; if etcd's own start outlives the timeout or ctx, it is stopped
// (and the data dir unlocked) as soon as that start returns. The member's metric
// families join component-base's legacy registry (see registerMetrics), so
// the process' /metrics serves them.
func Start(ctx context.Context, cfg Config) (*Handle, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	registerMetrics()
	if err := prepareDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	if err := checkSocketPaths(cfg.unixSocketPaths()); err != nil {
		return nil, err
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if !cfg.DatabaseChecked {
		if err := CheckDatabase(DatabasePath(cfg.DataDir)); err != nil {
			_ = lock.Close()
			return nil, err
		}
	}
	stop := make(chan struct{})
	ec, err := cfg.embedConfig()
	if err == nil {
		err = setLogger(ec, cfg.logLevel(), cfg.LogOutput, stop)
	}
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	var server atomic.Pointer[etcdserver.EtcdServer]
	ec.GRPCAdditionalServerOptions = append(ec.GRPCAdditionalServerOptions, grpc.ChainUnaryInterceptor(refuseWritesInterceptor(&server)))

	timeout := cfg.readyTimeout()
	timer := time.NewTimer(timeout)
	defer timer.Stop()

	startc := make(chan started, 1)
	go func() {
		e, err := embed.StartEtcd(ec)
		startc <- started{e, err}
	}()
	var e *embed.Etcd
	select {
	case s := <-startc:
		if s.err != nil {
			_ = lock.Close()
			return nil, fmt.Errorf("starting etcd: %w", s.err)
		}
		e = s.etcd
		server.Store(e.Server)
	case <-timer.C:
		abandon(startc, lock, stop)
		return nil, fmt.Errorf("etcd did not start within %s", timeout)
	case <-ctx.Done():
		abandon(startc, lock, stop)
		return nil, fmt.Errorf("etcd's start was abandoned: %w", context.Cause(ctx))
	}

	fail := func(err error) (*Handle, error) {
		close(stop)
		closeUnready(e)
		_ = lock.Close()
		return nil, err
	}
	var stopped error
	// A member whose log lost what its database applied is never ready:
	// said once it has shown so for lostWALChecks seconds in a row.
	check := time.NewTicker(time.Second)
	defer check.Stop()
	behind := 0
wait:
	for {
		select {
		case <-e.Server.ReadyNotify():
			break wait
		case err := <-e.Err():
			stopped = fmt.Errorf("etcd failed before it was ready: %w", orStopped(err))
			break wait
		case <-e.Server.StopNotify():
			stopped = errors.New("etcd stopped before it was ready")
			break wait
		case <-timer.C:
			return fail(fmt.Errorf("etcd was not ready within %s", timeout))
		case <-ctx.Done():
			return fail(fmt.Errorf("etcd's start was abandoned before it was ready: %w", context.Cause(ctx)))
		case <-check.C:
			lost := lostWAL(e.Server, cfg.DataDir)
			if lost == nil {
				behind = 0
				continue
			}
			if behind++; behind >= lostWALChecks {
				return fail(lost)
			}
		}
	}
	if stopped != nil {
		// A member removed from its cluster stops, or fails to serve, on
		// its own: say that rather than how it stopped.
		if removed := removedError(e, cfg.DataDir); removed != nil {
			stopped = removed
		}
		return fail(stopped)
	}

	h := &Handle{
		etcd:        e,
		lock:        lock,
		clientURLs:  cfg.advertiseClientURLs(),
		dataDir:     cfg.DataDir,
		ready:       make(chan struct{}),
		errc:        make(chan error, 1),
		stop:        stop,
		monitorDone: make(chan struct{}),
		diskDone:    make(chan struct{}),
	}
	close(h.ready)
	go h.monitor()
	if cfg.MinFreeDisk > 0 {
		h.disk = newDiskWatch(cfg.DataDir, cfg.MinFreeDisk, e.Server)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-stop
			cancel()
		}()
		go func() {
			defer close(h.diskDone)
			h.disk.run(ctx)
		}()
	} else {
		close(h.diskDone)
	}
	return h, nil
}

// Ready is closed once the member serves clients. Start returns only after
// that, so it is always closed; it is here for callers that select on it.
func (h *Handle) Ready() <-chan struct{} { return h.ready }

// Err delivers at most one error: why the member stopped serving on its own.
// Nothing is sent after Close.
func (h *Handle) Err() <-chan error { return h.errc }

// InProcessClient returns a client that calls the member directly, in
// this process: no gRPC, no socket. Like the member's listeners, it refuses
// writes before raft while a NOSPACE alarm is raised (refusewrites.go). It
// works while the member runs; the caller closes it.
func (h *Handle) InProcessClient() *clientv3.Client { return inProcessClient(h.etcd.Server) }

// ClientURLs returns the URLs clients use to reach the member (its
// advertised client URLs), usable as clientv3 endpoints and --etcd-servers.
func (h *Handle) ClientURLs() []string { return append([]string(nil), h.clientURLs...) }

// LowDisk returns why the member refuses writes for the free space of its
// data dir's file system (Config.MinFreeDisk), or nil while it does not.
func (h *Handle) LowDisk() error {
	if h.disk == nil {
		return nil
	}
	return h.disk.err()
}

// Close stops the member and releases its data dir. It is idempotent and
// safe to call concurrently; every call returns the first call's result.
func (h *Handle) Close() error {
	h.closeOnce.Do(func() {
		close(h.stop)
		<-h.diskDone
		h.etcd.Close()
		<-h.monitorDone
		h.closeErr = h.lock.Close()
	})
	return h.closeErr
}

// monitor forwards the first failure of the running member to errc.
func (h *Handle) monitor() {
	defer close(h.monitorDone)
	var err error
	select {
	case <-h.stop:
		return
	case err = <-h.etcd.Err():
		err = orStopped(err)
	case <-h.etcd.Server.StopNotify():
		err = errors.New("etcd server stopped")
	}
	if removed := removedError(h.etcd, h.dataDir); removed != nil {
		err = removed
	}
	select {
	case <-h.stop:
		// The failure is Close shutting the member down.
	default:
		h.errc <- fmt.Errorf("etcd: %w", err)
	}
}

// orStopped turns the nil that etcd reports when a listener stops serving
// into an error.
func orStopped(err error) error {
	if err == nil {
		return errors.New("a listener stopped serving")
	}
	return err
}

// prepareDataDir creates dir with mode 0700, or tightens an existing one.
func prepareDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	return nil
}

// checkSocketPaths refuses to start where etcd would delete a file that is
// not a socket: etcd removes whatever is at a socket path before listening.
func checkSocketPaths(paths []string) error {
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("--listen-client-urls: %s exists and is not a socket; refusing to replace it", p)
		}
	}
	return nil
}

// lockDataDir takes an exclusive lock on a file in dir, failing at once if
// another member (in this process or another) holds it.
func lockDataDir(dir string) (*fileutil.LockedFile, error) {
	path := filepath.Join(dir, lockFileName)
	lock, err := fileutil.TryLockFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if errors.Is(err, fileutil.ErrLocked) {
		return nil, fmt.Errorf("--data-dir %s is in use by another etcd member (%s is locked)", dir, path)
	}
	if err != nil {
		return nil, fmt.Errorf("locking --data-dir: %w", err)
	}
	return lock, nil
}

// alwaysQuiet reports etcd log messages that say nothing useful about a
// member run by gcp: the gRPC gateway and simple auth tokens are etcd's
// defaults, and auth is off.
func alwaysQuiet(msg string) bool {
	switch msg {
	case "Running http and grpc server on single port. This is not recommended for production.",
		"simple token is not cryptographically signed":
		return true
	}
	return false
}

// quietWhenStopping reports what etcd logs, up to error level, for each
// listener its own Close stops; it means nothing once Close has started.
func quietWhenStopping(msg string) bool {
	switch msg {
	case "setting up serving from embedded etcd failed.",
		"stopping insecure grpc server due to error",
		"stopped insecure grpc server due to error",
		"stopping secure grpc server due to error",
		"stopped secure grpc server due to error",
		"server has stopped; skipping GoAttach":
		return true
	}
	return false
}

// setLogger gives etcd a zap logger that drops the alwaysQuiet messages,
// and the quietWhenStopping ones once stop is closed. With out nil it
// writes through klog (logging.ZapCore): the process's format and
// verbosity, level a further floor if set; with out, etcd's own JSON to
// out at level (DefaultLogLevel's floor, warn, if empty).
func setLogger(ec *embed.Config, level string, out io.Writer, stop <-chan struct{}) error {
	var core zapcore.Core
	var opts []zap.Option
	if out == nil {
		lvl := zapcore.DebugLevel
		if level != "" {
			var err error
			if lvl, err = zapcore.ParseLevel(level); err != nil {
				return err
			}
		}
		core = logging.ZapCore(klog.Background().WithName("etcd"), lvl)
	} else {
		if level == "" {
			level = "warn"
		}
		lvl, err := zapcore.ParseLevel(level)
		if err != nil {
			return err
		}
		ecfg := logutil.DefaultZapLoggerConfig.EncoderConfig
		core = logging.WithoutHarmless(zapcore.NewCore(zapcore.NewJSONEncoder(ecfg), zapcore.AddSync(out), zap.NewAtomicLevelAt(lvl)))
		opts = append(opts, zap.AddCaller())
	}
	lg := zap.New(quietOnStop{Core: core, stop: stop}, opts...)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	return nil
}

// quietOnStop is the zap core of setLogger.
type quietOnStop struct {
	zapcore.Core
	stop <-chan struct{}
}

// With keeps the filter on derived loggers.
func (q quietOnStop) With(fields []zapcore.Field) zapcore.Core {
	return quietOnStop{Core: q.Core.With(fields), stop: q.stop}
}

// Check drops the messages above and defers everything else.
func (q quietOnStop) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if alwaysQuiet(ent.Message) {
		return ce
	}
	if quietWhenStopping(ent.Message) {
		select {
		case <-q.stop:
			return ce
		default:
		}
	}
	return q.Core.Check(ent, ce)
}

// abandon lets a start that outlived its wait go: StartEtcd cannot be
// interrupted, so whatever it eventually starts is stopped, and the data
// dir stays locked until then.
func abandon(startc <-chan started, lock io.Closer, stop chan struct{}) {
	close(stop)
	go func() {
		if s := <-startc; s.etcd != nil {
			closeUnready(s.etcd)
		}
		_ = lock.Close()
	}()
}

// closeUnready closes a member that may not be ready: embed.Etcd.Close
// waits for its client servers, which start only once the member is ready
// or stopping, so the server is stopped first.
func closeUnready(e *embed.Etcd) {
	e.Server.HardStop()
	e.Close()
}

// started is what embed.StartEtcd returned.
type started struct {
	etcd *embed.Etcd
	err  error
}
