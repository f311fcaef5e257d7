// Package testserver starts a real control plane in-process for Go tests,
// the way envtest does for controller-runtime users but without binaries
// to download: an embedded etcd in a temporary directory, the API server
// of a layering.Stack on a free loopback port with real HTTPS, optionally
// its controllers, and CRDs installed from objects or files. It returns a
// *rest.Config for the system:masters admin and stops cleanly. Servers in
// one test binary share nothing mutable, so tests may run in parallel.
//
//	func TestMyController(t *testing.T) {
//		t.Parallel()
//		s := testserver.Start(t, testserver.Options{CRDPaths: []string{"config/crd"}})
//		client := kubernetes.NewForConfigOrDie(s.AdminConfig)
//		...
//	}
package testserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/authz"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/pkg/layering"
)

// Options say what the test server runs.
type Options struct {
	// Stack is the control plane to serve; nil means layering.Generic().
	Stack layering.Stack
	// Controllers selects which of the stack's controllers run in the
	// server's process, as --controllers does: "*" for those on by
	// default, "name" or "-name" for one. Empty: none, like envtest (no
	// namespace deletion, no garbage collection). They start after the
	// CRDs are installed, so they see them at once, and Start returns when
	// their informers have synced.
	Controllers []string
	// CRDs are created once the server is ready; Start returns when each
	// is established and served.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// CRDPaths are YAML or JSON files, or directories of them (not
	// recursive), holding CRDs (several documents per file are fine),
	// installed like CRDs. A relative path is relative to the working
	// directory, which `go test` sets to the directory of the package
	// under test: "config/crd" in a test of ./controllers is
	// ./controllers/config/crd, so a test in a subpackage writes
	// "../config/crd" for a directory at the module root.
	CRDPaths []string
	// DataDir holds the PKI and etcd data; empty means a new temporary
	// directory, removed by Stop, which the server writes without syncing
	// it to disk (allinone.Options.Ephemeral): a few milliseconds saved per
	// file and per etcd write. A DataDir given here is synced, as `gcp
	// start` syncs its own.
	DataDir string
	// APIServer adjusts the apiserver options after the test server's.
	APIServer func(*options.Options)
	// Authentication configures the authenticators as an
	// --authentication-config file would (JWT authenticators for the
	// issuers it names, the anonymous section), given as a Go value; it is
	// not reloaded. nil keeps client certificates and service account
	// tokens only.
	Authentication *apiserverapi.AuthenticationConfiguration
	// Authorization configures the authorizer chain as an
	// --authorization-config file would (system:masters first, then the
	// stack's own authorizers other than RBAC, then these in order; type
	// RBAC is the stack's), given as a Go value; it is not reloaded. nil
	// keeps the stack's own chain.
	Authorization *apiserverapi.AuthorizationConfiguration
	// Authorizers are the test's own Go authorizers: they join the chain
	// after system:masters, with the stack's, before any configured by
	// Authorization. SubjectAccessReviews and kubectl auth can-i see them.
	Authorizers []authz.Named
	// MinFreeDisk is the free space, in bytes, the data dir's file system
	// keeps, as `gcp start --min-free-disk`: below it the embedded etcd
	// refuses writes (507, reads and deletes go on) instead of dying when
	// the disk fills, until a quarter more is free again. 0 means gcp
	// start's default (allinone.NewOptions().Etcd, 512 MiB); negative watches
	// nothing.
	MinFreeDisk int64
	// ReadyTimeout bounds the wait for readiness and CRDs; zero means a
	// minute.
	ReadyTimeout time.Duration
	// LogOutput, when set, receives the server's log lines as they are
	// written (os.Stderr, say). Unset, the server is quiet: Start keeps
	// its lines and prints them with t.Log if the test fails, and Run
	// keeps them for Server.Log. klog is one logger per process: while
	// several servers run, each one's log has the lines of all of them.
	LogOutput io.Writer
}

// Server is a running control plane.
type Server struct {
	// ControlPlane has the data dir, URL, PKI paths and admin kubeconfig.
	*allinone.ControlPlane
	// AdminConfig is a system:masters client config; copy it before
	// changing it (rest.CopyConfig).
	AdminConfig *rest.Config
	// Client is a clientset for AdminConfig.
	Client kubernetes.Interface

	cancel            context.CancelFunc
	cancelControllers context.CancelFunc
	controllersDone   chan error
	removeDir         string
	log               *logSink
	stopped           bool
	stoppedErr        error
}

// Start starts a server for t and stops it when t ends; it fails t if the
// server does not become ready.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	freshDir := o.DataDir == ""
	if freshDir {
		o.DataDir = t.TempDir()
	}
	log := hub.attach(o.LogOutput)
	// Cleanups run last first: the log is printed after the server stopped.
	t.Cleanup(func() {
		hub.detachAfterStop(log)
		if t.Failed() && o.LogOutput == nil {
			t.Logf("test server log:\n%s", log.String())
		}
	})
	s, err := run(context.Background(), o, log, freshDir)
	if err != nil {
		t.Fatalf("starting test server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("test server stopped with error: %v", err)
		}
	})
	return s
}

// Run starts a server and waits until it is ready and its CRDs are served.
// The caller stops it with Stop (also when ctx ends); use it where there is
// no testing.TB, such as TestMain or a Ginkgo BeforeSuite.
func Run(ctx context.Context, o Options) (*Server, error) {
	log := hub.attach(o.LogOutput)
	s, err := run(ctx, o, log, o.DataDir == "")
	if err != nil {
		hub.detach(log)
		return nil, err
	}
	s.log = log
	return s, nil
}

// Log is what the server logged, kept since Run when Options.LogOutput is
// unset; empty for a server from Start, which prints it if the test fails.
func (s *Server) Log() string {
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

func run(ctx context.Context, o Options, log *logSink, freshDir bool) (*Server, error) {
	stack := o.Stack
	if stack == nil {
		stack = layering.Generic()
	}
	comp, err := stack.Compose()
	if err != nil {
		return nil, err
	}
	timeout := o.ReadyTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	crds, err := readCRDs(o.CRDPaths)
	if err != nil {
		return nil, err
	}
	crds = append(crds, o.CRDs...)

	minFreeDisk := o.MinFreeDisk
	switch {
	case minFreeDisk == 0:
		minFreeDisk = allinone.NewOptions().Etcd.MinFreeDisk
	case minFreeDisk < 0:
		minFreeDisk = 0
	}
	s := &Server{}
	if o.DataDir == "" {
		dir, err := os.MkdirTemp("", "gcp-testserver-")
		if err != nil {
			return nil, err
		}
		o.DataDir, s.removeDir = dir, dir
	}
	// A fresh server on a disk already below it could not write what it
	// needs to become ready: say so now instead of at the ready timeout.
	if err := etcd.CheckFreeDisk(allinone.EtcdDir(o.DataDir), minFreeDisk); err != nil {
		s.removeData()
		return nil, fmt.Errorf("test server: %w; free space there, or set testserver.Options.MinFreeDisk lower (negative turns the watch off) or DataDir elsewhere", err)
	}
	// Only into a data dir of the test server's own: one of the caller's
	// is left as a failed start found it.
	if freshDir {
		if err := seedServiceAccountKey(o.DataDir); err != nil {
			s.removeData()
			return nil, fmt.Errorf("test server: service account key: %w", err)
		}
	}
	ctx, s.cancel = context.WithCancel(ctx)
	// Its own listener, whose connections Stop closes at once instead of
	// waiting out HTTP/2's GOAWAY timeout on idle ones.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.cancel()
		s.removeData()
		return nil, err
	}
	ao := o.allinoneOptions(minFreeDisk, log, freshDir, newClosingListener(ln))
	cp, err := allinone.Start(ctx, *ao, comp)
	if err != nil {
		s.cancel()
		s.removeData()
		return nil, err
	}
	s.ControlPlane = cp
	fail := func(err error) (*Server, error) {
		return nil, errors.Join(err, s.Stop())
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		return fail(fmt.Errorf("admin kubeconfig: %w", err))
	}
	cfg.QPS, cfg.Burst = -1, -1
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail(err)
	}
	s.AdminConfig, s.Client = cfg, client
	if err := waitReady(ctx, cp, client.Discovery().RESTClient(), timeout); err != nil {
		return fail(err)
	}
	if len(crds) > 0 {
		if err := InstallCRDs(ctx, cfg, timeout, crds...); err != nil {
			return fail(err)
		}
	}
	if len(o.Controllers) > 0 && len(comp.Controllers) > 0 {
		if err := s.runControllers(ctx, comp.Controllers, o.Controllers, timeout); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// testEtcdHeartbeat is the test server's etcd heartbeat, a fifth of its
// election timeout (etcd's smallest ratio). A new member with no peers
// elects itself 1 to 5 heartbeats after it starts, and the API server
// cannot be built before that: with gcp start's 20 ms (allinone) that was
// 20–100 ms, 49 ms on average of waiting after the configuration was
// built; with 5 ms it is 5–25 ms (docs/performance.md). A tick every 5 ms
// costs a member about 1 % of a core more while it idles, which a server
// that lives as long as a test can afford.
const testEtcdHeartbeat = 5 * time.Millisecond

// allinoneOptions are the options allinone.Start runs the test server
// with: o's data dir, listener and authentication, and what the test
// server does differently from gcp start.
func (o Options) allinoneOptions(minFreeDisk int64, log io.Writer, freshDir bool, ln net.Listener) *allinone.Options {
	ao := allinone.NewOptions()
	ao.DataDir, ao.Etcd.MinFreeDisk, ao.Etcd.LogOutput = o.DataDir, minFreeDisk, log
	// Data thrown away at Stop need not survive a machine crash, nor a
	// flag that makes no sense leave the etcd member untouched.
	ao.Ephemeral = freshDir
	ao.Etcd.HeartbeatInterval, ao.Etcd.ElectionTimeout = testEtcdHeartbeat, 5*testEtcdHeartbeat
	// A test binary starts servers one after another, or several at
	// once: the memory one start dropped serves the next, and a forced
	// collection of the whole process at each one's readiness cost about
	// 0.1 s of CPU per server (docs/performance.md).
	ao.KeepStartupMemory = true
	ao.APIServer.SecureServing.Listener = ln
	// Like envtest: no controllers unless asked (they start below), and
	// Secrets stored as they are.
	ao.Controllers, ao.SecretsEncryption = nil, false
	// Tests shut down at once; no load balancer to drain.
	ao.APIServer.GenericServerRunOptions.ShutdownDelayDuration = 0
	ao.APIServer.Authentication.Config = o.Authentication
	ao.APIServer.Authorization.Config = o.Authorization
	ao.APIServer.Authorization.Authorizers = append(ao.APIServer.Authorization.Authorizers, o.Authorizers...)
	if o.APIServer != nil {
		o.APIServer(ao.APIServer)
	}
	return ao
}

// runControllers runs the selected controllers in this process, as `gcp
// start` does, and waits until their informers have synced.
func (s *Server) runControllers(ctx context.Context, descriptors []controllers.Descriptor, selection []string, timeout time.Duration) error {
	cfg, err := allinone.ControllersConfig(s.ControlPlane, descriptors, selection)
	if err != nil {
		return err
	}
	synced := make(chan struct{})
	cfg.OnInformersSynced = func() { close(synced) }
	ctx, s.cancelControllers = context.WithCancel(ctx)
	s.controllersDone = make(chan error, 1)
	go func() { s.controllersDone <- controllers.Run(ctx, cfg) }()
	select {
	case <-synced:
		return nil
	case err := <-s.controllersDone:
		s.controllersDone <- err
		return fmt.Errorf("controllers stopped before running: %w", err)
	case <-time.After(timeout):
		return fmt.Errorf("controllers not running after %v", timeout)
	}
}

// Stop stops the server, waits for it and removes a temporary data dir.
// It is idempotent.
func (s *Server) Stop() error {
	if s.stopped {
		return s.stoppedErr
	}
	s.stopped = true
	// Controllers first, while the server still answers them.
	var errs []error
	if s.cancelControllers != nil {
		s.cancelControllers()
		if err := <-s.controllersDone; err != nil {
			errs = append(errs, fmt.Errorf("controllers: %w", err))
		}
	}
	s.cancel()
	if s.ControlPlane != nil {
		errs = append(errs, s.ControlPlane.Wait())
	}
	s.stoppedErr = errors.Join(errs...)
	s.removeData()
	if s.log != nil {
		hub.detachAfterStop(s.log)
	}
	return s.stoppedErr
}

// Close is Stop, so that a Server is closed like the handles of what it
// runs (allinone.ControlPlane's Close, which it would otherwise promote,
// leaves the controllers and the data dir behind).
func (s *Server) Close() error { return s.Stop() }

func (s *Server) removeData() {
	if s.removeDir != "" {
		_ = os.RemoveAll(s.removeDir)
	}
}

// waitReady waits until cp is ready, stops, or timeout passes; then it
// asks /readyz once with c, so that the error says which checks fail.
func waitReady(ctx context.Context, cp *allinone.ControlPlane, c rest.Interface, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-cp.Ready():
		return nil
	case <-cp.Done():
		return fmt.Errorf("exited before ready: %w", cp.Wait())
	case <-ctx.Done():
		return fmt.Errorf("not ready: %w", ctx.Err())
	case <-timer.C:
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Get().AbsPath("/readyz").Param("verbose", "true").Do(ctx).Error(); err != nil {
		return fmt.Errorf("not ready: %w", err)
	}
	return fmt.Errorf("not ready within %v", timeout)
}

// readyPollInterval is how often WaitReady asks /readyz. A start takes a
// few tenths of a second and returns on the first 200 after it: at 50 ms
// that added 25 ms on average, at 10 ms it adds 5 for about 20 more
// requests of well under a millisecond each.
const readyPollInterval = 10 * time.Millisecond

// WaitReady polls /readyz with c until it answers 200 or timeout passes,
// for a server this process knows only by a client (one run by another
// process). A Server, and an allinone.ControlPlane, says so itself: its
// ControlPlane.Ready is closed once /readyz is 200, which Run and Start
// wait for.
func WaitReady(ctx context.Context, c rest.Interface, timeout time.Duration) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, readyPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var status int
		res := c.Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		lastErr = res.Error()
		return status == http.StatusOK, nil
	})
	if err != nil && lastErr != nil {
		return lastErr
	}
	return err
}
