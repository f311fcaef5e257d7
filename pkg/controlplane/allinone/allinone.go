// Package allinone runs a whole control plane in one process from one data
// directory: PKI, an embedded etcd member on a private unix socket, and the
// API server. It is what `gcp start` and the test server run.
package allinone

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/csrsigning"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/pkg/controlplane/sdnotify"
)

// Options configure an all-in-one control plane.
type Options struct {
	// DataDir holds the PKI, the etcd data and admin.kubeconfig (mode 0700).
	DataDir string
	// BindAddress and SecurePort are where the API server serves HTTPS;
	// port 0 picks a free port.
	BindAddress string
	SecurePort  int
	// TLSSANs are extra names or IPs for the serving certificate.
	TLSSANs []string
	// RuntimeConfig turns API group versions or resources on and off, as
	// the apiserver's --runtime-config.
	RuntimeConfig map[string]string
	// EnableAdmissionPlugins and DisableAdmissionPlugins are the
	// apiserver's --enable-admission-plugins and --disable-admission-plugins.
	EnableAdmissionPlugins, DisableAdmissionPlugins []string
	// APIServer, if set, is called on the apiserver options after gcp has
	// filled in etcd, TLS and authentication, to adjust the rest.
	APIServer func(*options.Options)
	// Notify, under systemd, is sent READY=1 once /readyz is 200 and
	// STOPPING=1 when the control plane begins to stop (`gcp start` takes
	// it from $NOTIFY_SOCKET); the zero value sends nothing.
	Notify sdnotify.Notifier
	// ShutdownWatchTerminationGracePeriod, when set, is how long a stopping
	// server waits for open watches before it closes them, as gcp
	// apiserver's --shutdown-watch-termination-grace-period; nil means
	// its default (options.DefaultShutdownWatchTerminationGracePeriod).
	ShutdownWatchTerminationGracePeriod *time.Duration
	// SecretsEncryption encrypts Secrets in etcd with a key kept in the
	// PKI dir (EncryptionConfigName), made on the first start. NewOptions
	// turns it on.
	SecretsEncryption bool
	// CompactionInterval, when set, is how often the API server compacts
	// etcd's history, as gcp apiserver's --etcd-compaction-interval; nil
	// means its default of 5 minutes.
	CompactionInterval *time.Duration
	// AuditLogPath, when set, writes an audit log there ("-" is standard
	// output) with the data dir's audit policy (AuditPolicyName, the
	// default written the first time) and rotation after 100 MiB, keeping
	// 10 files for 30 days.
	AuditLogPath string
	// Profiling serves /debug/pprof and /debug/flags/v to system:masters,
	// as the apiserver's --profiling; off by default.
	Profiling bool
	// QuotaBackendBytes caps the embedded etcd's database, as gcp etcd's
	// --quota-backend-bytes; 0 means etcd's default of 2 GiB.
	QuotaBackendBytes int64
	// MinFreeDisk is the free space, in bytes, the data dir's file system
	// keeps: below it the embedded etcd raises its NOSPACE alarm, so
	// writes get 507 while reads and deletes go on, until a quarter more
	// is free again (etcd.Config.MinFreeDisk). 0 watches nothing;
	// NewOptions sets etcd.DefaultMinFreeDisk.
	MinFreeDisk int64
	// SnapshotInterval, when positive, takes a snapshot of etcd every
	// interval into SnapshotDir (empty: DefaultSnapshotDir) and keeps the
	// newest SnapshotRetention.
	SnapshotInterval  time.Duration
	SnapshotRetention int
	SnapshotDir       string
	// SnapshotCompress gzips the scheduled snapshots.
	SnapshotCompress bool
	// Controllers selects which of the composition's controllers run in
	// the same process, as --controllers does: "*" for those on by
	// default, "name" or "-name" for one. They run as
	// system:gcp-controllers with a service account per controller,
	// without leader election (one process owns the data dir). Empty: no
	// controllers.
	Controllers []string
}

// NewOptions returns the defaults of `gcp start`: the controllers on by
// default run.
func NewOptions() *Options {
	return &Options{DataDir: ".gcp", BindAddress: "127.0.0.1", SecurePort: options.DefaultSecurePort, Controllers: []string{"*"},
		SecretsEncryption: true, MinFreeDisk: etcd.DefaultMinFreeDisk}
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q is not an IP address", o.BindAddress))
	}
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is not a port (0-65535)", o.SecurePort))
	}
	if o.QuotaBackendBytes < 0 {
		errs = append(errs, fmt.Errorf("--quota-backend-bytes %d is negative", o.QuotaBackendBytes))
	}
	if o.MinFreeDisk < 0 {
		errs = append(errs, fmt.Errorf("--min-free-disk %d is negative", o.MinFreeDisk))
	}
	if o.SnapshotInterval < 0 {
		errs = append(errs, fmt.Errorf("--snapshot-interval %s is negative", o.SnapshotInterval))
	}
	if o.SnapshotInterval > 0 && o.SnapshotRetention < 1 {
		errs = append(errs, fmt.Errorf("--snapshot-retention %d: keep at least one snapshot", o.SnapshotRetention))
	}
	return utilerrors.NewAggregate(errs)
}

// AdminKubeconfigName is the admin kubeconfig's file name in the data dir.
const AdminKubeconfigName = pki.AdminKubeconfigName

// ControlPlane is a started all-in-one control plane.
type ControlPlane struct {
	// DataDir is the absolute data directory.
	DataDir string
	// URL is the API server's https URL.
	URL string
	// AdminKubeconfig is the path of the system:masters kubeconfig.
	AdminKubeconfig string
	// PKI is the certificate set in the data dir.
	PKI *pki.Files

	done chan struct{}
	err  error
}

// Start prepares the data dir, starts etcd and begins serving; the server
// becomes ready shortly after (poll /readyz). Everything stops when ctx is
// done; Wait returns then.
func Start(ctx context.Context, o Options, comp composition.Composition) (*ControlPlane, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	// The port first: a start that cannot serve creates nothing on disk.
	ln, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort)))
	if err != nil {
		return nil, fmt.Errorf("--secure-port: %w", err)
	}
	// Until the server runs, the listener is Start's to close.
	ownsListener := true
	closeListener := func() {
		if ownsListener {
			_ = ln.Close()
		}
	}
	undoDataDir, err := makeDataDir(dataDir)
	if err != nil {
		closeListener()
		return nil, fmt.Errorf("data dir: %w", err)
	}
	unlock, err := lockDataDir(dataDir)
	if err != nil {
		// Another gcp may hold a data dir this start just created too.
		closeListener()
		return nil, err
	}
	cleanup := []func(){closeListener, unlock}
	// Files and directories this start makes in a data dir that was there,
	// which a failed start removes again: one refused for the Secrets in
	// a restored etcd leaves no new PKI or key where the old pki/ goes.
	var undoNew []func()
	removeIfNew := func(path string) {
		if _, err := os.Lstat(path); os.IsNotExist(err) {
			undoNew = append(undoNew, func() { _ = os.RemoveAll(path) })
		}
	}
	// A start that fails (a flag only the API server's configuration can
	// check, etcd not starting) leaves the disk as it found it.
	fail := func(err error) (*ControlPlane, error) {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
		for i := len(undoNew) - 1; i >= 0; i-- {
			undoNew[i]()
		}
		undoDataDir()
		return nil, err
	}

	pkiDir := filepath.Join(dataDir, "pki")
	removeIfNew(pkiDir)
	files, err := pki.Ensure(pki.Options{Dir: pkiDir, ServingSANs: o.TLSSANs})
	if err != nil {
		return fail(err)
	}

	socket := EtcdSocket(dataDir)
	port := ln.Addr().(*net.TCPAddr).Port

	ao := options.NewOptions()
	ao.AddAdmissionPlugins(comp.AdmissionPlugins)
	ao.Etcd.StorageConfig.Transport.ServerList = []string{etcd.UnixSocketURL(socket)}
	ao.SecureServing.Listener = ln
	ao.SecureServing.BindAddress = net.ParseIP(o.BindAddress)
	ao.SecureServing.BindPort = port
	ao.SecureServing.ServerCert.CertKey.CertFile = files.ServingCert
	ao.SecureServing.ServerCert.CertKey.KeyFile = files.ServingKey
	ao.Authentication.ClientCAFile = files.CACert
	ao.Authentication.RequestHeader.ClientCAFile = files.FrontProxyCACert
	ao.Authentication.RequestHeader.AllowedNames = []string{pki.FrontProxyClientUser}
	ao.ProxyClientCertFile = files.FrontProxyClientCert
	ao.ProxyClientKeyFile = files.FrontProxyClientKey
	// Service account tokens are issued by this server's URL, which is
	// also where their OIDC discovery document is served.
	ao.Authentication.ServiceAccounts.Issuers = []string{serverURL(o.BindAddress, port)}
	ao.Authentication.ServiceAccounts.SigningKeyFile = files.ServiceAccountKey
	ao.Authentication.ServiceAccounts.KeyFiles = []string{files.ServiceAccountPublicKey}
	for k, v := range o.RuntimeConfig {
		ao.APIEnablement.RuntimeConfig[k] = v
	}
	ao.Admission.EnablePlugins = append(ao.Admission.EnablePlugins, o.EnableAdmissionPlugins...)
	ao.Admission.DisablePlugins = append(ao.Admission.DisablePlugins, o.DisableAdmissionPlugins...)
	ao.Features.EnableProfiling = o.Profiling
	if o.CompactionInterval != nil {
		ao.Etcd.StorageConfig.CompactionInterval = *o.CompactionInterval
	}
	if o.AuditLogPath != "" {
		removeIfNew(filepath.Join(dataDir, AuditPolicyName))
		policy, err := ensureAuditPolicy(dataDir)
		if err != nil {
			return fail(err)
		}
		ao.Audit.PolicyFile = policy
		ao.Audit.LogOptions.Path = o.AuditLogPath
		ao.Audit.LogOptions.MaxAge, ao.Audit.LogOptions.MaxBackups, ao.Audit.LogOptions.MaxSize = auditLogMaxAge, auditLogMaxBackups, auditLogMaxSize
	}
	if o.SecretsEncryption {
		removeIfNew(filepath.Join(pkiDir, EncryptionConfigName))
		path, err := ensureEncryptionConfig(pkiDir)
		if err != nil {
			return fail(err)
		}
		ao.Etcd.EncryptionProviderConfigFilepath = path
	}
	if o.ShutdownWatchTerminationGracePeriod != nil {
		ao.GenericServerRunOptions.ShutdownWatchTerminationGracePeriod = *o.ShutdownWatchTerminationGracePeriod
	}
	// The storage calls the embedded etcd in this process, a client per
	// resource (pkg/controlplane/etcdstorage), unless o.APIServer points it
	// elsewhere. The member starts after the configuration is built.
	var member atomic.Pointer[etcd.Handle]
	// A copy: o.APIServer may change the list in place.
	embedded := slices.Clone(ao.Etcd.StorageConfig.Transport.ServerList)
	ao.NewEtcdClient = func() (*clientv3.Client, error) {
		if m := member.Load(); m != nil {
			return m.InProcessClient(), nil
		}
		return nil, errors.New("the embedded etcd is not running")
	}
	if o.APIServer != nil {
		o.APIServer(ao)
	}
	if ao.Etcd == nil || !slices.Equal(ao.Etcd.StorageConfig.Transport.ServerList, embedded) || len(ao.Etcd.EtcdServersOverrides) > 0 {
		ao.NewEtcdClient = nil
	}
	// The etcd database, before anything logs: a corrupt one would crash
	// etcd's bbolt, and a Secret the server could not read would answer
	// 500, and so would every list of Secrets (a restore without the old
	// data dir's key, a key removed too early in a rotation).
	db := etcd.DatabasePath(EtcdDir(dataDir))
	if err := etcd.CheckDatabase(db); err != nil {
		return fail(restoreWith(err))
	}
	if ao.NewEtcdClient != nil {
		prefix := path.Join(ao.Etcd.StorageConfig.Prefix, "secrets") + "/"
		if err := checkSecrets(ctx, db, prefix, ao.Etcd.EncryptionProviderConfigFilepath, filepath.Join(pkiDir, EncryptionConfigName)); err != nil {
			return fail(err)
		}
	}
	// The etcd health checks are added below, with clients that Start
	// closes (addEtcdChecks), instead of by the etcd options.
	withEtcdChecks := ao.Etcd != nil && !ao.Etcd.SkipHealthEndpoints
	if ao.Etcd != nil {
		ao.Etcd.SkipHealthEndpoints = true
	}
	completed, err := ao.Complete()
	if err != nil {
		return fail(err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return fail(utilerrors.NewAggregate(errs))
	}
	// The configuration is built, and so checked against the composition,
	// before etcd starts: a flag that makes no sense fails with its own
	// error and nothing else.
	cfg, err := apiserver.NewConfig(completed, comp)
	if err != nil {
		return fail(err)
	}
	var checks etcdChecks
	if withEtcdChecks {
		var configs []*genericapiserver.Config
		for _, c := range []*genericapiserver.Config{cfg.Generic, apiExtensionsConfig(cfg), aggregatorConfig(cfg)} {
			if c != nil {
				configs = append(configs, c)
			}
		}
		if checks, err = addEtcdChecks(completed.Etcd, configs...); err != nil {
			return fail(fmt.Errorf("etcd health checks: %w", err))
		}
	}
	// Readiness names low disk, which the embedded member alone sees:
	// the alarm checks only say NOSPACE, whose recovery is another.
	freeDisk := healthz.NamedCheck("etcd-free-disk", func(*http.Request) error {
		if m := member.Load(); m != nil {
			return m.LowDisk()
		}
		return nil
	})
	for _, c := range []*genericapiserver.Config{cfg.Generic, apiExtensionsConfig(cfg), aggregatorConfig(cfg)} {
		if c != nil {
			c.AddReadyzChecks(freeDisk)
		}
	}
	storages := &storageTracker{}
	storages.track(cfg)

	cp := &ControlPlane{
		DataDir:         dataDir,
		URL:             serverURL(o.BindAddress, port),
		AdminKubeconfig: filepath.Join(dataDir, AdminKubeconfigName),
		PKI:             files,
		done:            make(chan struct{}),
	}
	removeIfNew(cp.AdminKubeconfig)
	if err := pki.WriteKubeconfig(cp.AdminKubeconfig, cp.URL, files.CACert, files.AdminCert, files.AdminKey, "gcp"); err != nil {
		return fail(fmt.Errorf("admin kubeconfig: %w", err))
	}
	adminConfig, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		return fail(fmt.Errorf("admin kubeconfig: %w", err))
	}
	// The controllers' kubeconfig is written even without controllers here,
	// for a `gcp controllers` run against this control plane.
	controllersKubeconfig := filepath.Join(dataDir, ControllersKubeconfigName)
	removeIfNew(controllersKubeconfig)
	if err := pki.WriteKubeconfig(controllersKubeconfig, cp.URL, files.CACert, files.ControllersCert, files.ControllersKey, "gcp"); err != nil {
		return fail(fmt.Errorf("controllers kubeconfig: %w", err))
	}
	var controllersCfg *controllers.Config
	if len(o.Controllers) > 0 && len(comp.Controllers) > 0 {
		if controllersCfg, err = controllersConfig(controllersKubeconfig, files, comp.Controllers, o.Controllers); err != nil {
			return fail(err)
		}
	}

	etcdCfg := etcd.DefaultConfig(filepath.Join(dataDir, "etcd"))
	etcdCfg.ListenClientURLs = []string{etcd.UnixSocketURL(socket)}
	etcdCfg.AdvertiseClientURLs = etcdCfg.ListenClientURLs
	etcdCfg.QuotaBackendBytes = o.QuotaBackendBytes
	etcdCfg.MinFreeDisk = o.MinFreeDisk
	// Checked above, with the data dir locked since.
	etcdCfg.DatabaseChecked = true
	// One member with no peers: a restart elects itself after a random 1 to
	// 10 heartbeats, 0.1–1 s with etcd's 100 ms, which was most of a warm
	// start's time and spread (docs/performance.md). With 20 ms and an
	// election timeout of five of them (etcd's minimum ratio) it is
	// 20–100 ms. Faster ticks cost idle CPU: 1.6 % of a core at 50 ms, 1.9 %
	// at 20 ms, 2.6 % at 10 ms, which gains little more. A member with no
	// peers cannot lose its leadership to a slow tick, so the short timeout
	// risks nothing; etcd's request timeout becomes 5.2 s (7 s).
	etcdCfg.HeartbeatInterval, etcdCfg.ElectionTimeout = 20*time.Millisecond, 100*time.Millisecond
	store, err := startMember(etcdCfg)
	if err != nil {
		return fail(err)
	}
	member.Store(store)
	// If the server fails to build, whatever talks to etcd goes before it:
	// the storage built so far (its clients and their watch streams; see
	// storage.go), and the health checks' clients once they exist.
	cleanup = append(cleanup, func() { _ = store.Close() }, storages.destroy)
	server, err := cfg.Complete().New()
	if err != nil {
		return fail(err)
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return fail(err)
	}
	checksStop := make(chan struct{})
	cleanup = append(cleanup, func() { close(checksStop) })
	if err := checks.start(checksStop); err != nil {
		return fail(err)
	}
	// From here the server owns its storage and its listener: it destroys
	// and closes them when it stops.
	storages.release()
	ownsListener = false

	serverCtx, cancelServer := context.WithCancel(ctx)
	go func() {
		defer close(cp.done)
		serverErr := make(chan error, 1)
		go func() { serverErr <- prepared.Run(serverCtx) }()
		if client, err := discovery.NewDiscoveryClientForConfig(adminConfig); err == nil {
			ready := sdnotify.Readyz(client.RESTClient())
			go o.Notify.WhenReady(serverCtx, ready)
			go releaseStartupGarbage(serverCtx, ready)
		}
		// Controllers stop first (their context ends with the server's)
		// and are waited for before etcd goes.
		controllersCtx, cancelControllers := context.WithCancel(serverCtx)
		var controllersErr chan error // nil without controllers: never ready
		waitControllers := func() error {
			if controllersErr == nil {
				return nil
			}
			return <-controllersErr
		}
		if controllersCfg != nil {
			controllersErr = make(chan error, 1)
			go func() { controllersErr <- controllers.Run(controllersCtx, controllersCfg) }()
		}
		if o.SnapshotInterval > 0 {
			dir := DefaultSnapshotDir(dataDir)
			if o.SnapshotDir != "" {
				dir, _ = filepath.Abs(o.SnapshotDir)
			}
			go snapshotEvery(serverCtx, socket, etcd.SnapshotDir(dir), o.SnapshotInterval, o.SnapshotRetention, o.SnapshotCompress,
				etcdCfg.DataDir, store.LowDisk)
		}
		var errs []error
		select {
		case err := <-serverErr:
			errs = append(errs, err)
			cancelControllers()
			errs = append(errs, waitControllers())
		case err := <-store.Err():
			errs = append(errs, fmt.Errorf("etcd: %w", err))
			cancelServer()
			errs = append(errs, waitControllers(), <-serverErr)
		case err := <-controllersErr:
			if err != nil {
				errs = append(errs, fmt.Errorf("controllers: %w", err))
			}
			cancelServer()
			errs = append(errs, <-serverErr)
		}
		cancelControllers()
		cancelServer()
		// Stop in reverse order: the API server has drained and destroyed
		// its storage; now the etcd health checks' clients, etcd and the
		// data dir lock.
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
		cp.err = utilerrors.NewAggregate(errs)
		klog.V(1).InfoS("Control plane stopped", "dataDir", dataDir)
	}()
	return cp, nil
}

// apiExtensionsConfig is the apiextensions server's generic configuration,
// nil without one.
func apiExtensionsConfig(cfg *apiserver.Config) *genericapiserver.Config {
	if cfg.APIExtensions == nil {
		return nil
	}
	return &cfg.APIExtensions.GenericConfig.Config
}

// aggregatorConfig is the aggregator's generic configuration, nil without
// one.
func aggregatorConfig(cfg *apiserver.Config) *genericapiserver.Config {
	if cfg.Aggregator == nil {
		return nil
	}
	return &cfg.Aggregator.GenericConfig.Config
}

// ControllersKubeconfigName is the controllers' kubeconfig in the data dir.
const ControllersKubeconfigName = pki.ControllersKubeconfigName

// ControllersConfig configures descriptors' controllers to run in this
// process against c, as `gcp start` runs them: the controllers' kubeconfig
// of the data dir, a service account per controller, the cluster CA for
// the CSR signer, no serving, no leader election; selection is as
// --controllers. Start uses it when Options.Controllers is set; a caller
// that wants to choose when they start (after installing CRDs, say) runs
// controllers.Run with it.
func ControllersConfig(c *ControlPlane, descriptors []controllers.Descriptor, selection []string) (*controllers.Config, error) {
	return controllersConfig(filepath.Join(c.DataDir, ControllersKubeconfigName), c.PKI, descriptors, selection)
}

func controllersConfig(kubeconfig string, files *pki.Files, descriptors []controllers.Descriptor, selection []string) (*controllers.Config, error) {
	o := controllers.NewOptions(descriptors)
	o.Kubeconfig = kubeconfig
	o.Generic.Controllers = selection
	// The CSR signer signs with the cluster CA, the one the API server
	// trusts for client certificates.
	csrsigning.UseCA(o, files.CACert, files.CAKey)
	o.SecureServing.BindPort = 0
	o.Generic.LeaderElection.LeaderElect = false
	cfg, err := o.Config()
	if err != nil {
		return nil, fmt.Errorf("controllers: %w", err)
	}
	// The controllers run in the API server's process: compressing their
	// lists and watches would cost CPU on both ends and keep a 32 KiB
	// inflate window per watch (two watches per custom resource, for the
	// garbage collector and the quota controller) to save no bandwidth.
	cfg.Kubeconfig.DisableCompression = true
	return cfg, nil
}

// serverURL is the https URL clients reach the server at: the bind address,
// or loopback when bound to every interface.
func serverURL(bindAddress string, port int) string {
	host := bindAddress
	if ip := net.ParseIP(host); ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// Wait blocks until the control plane has stopped and returns why.
func (c *ControlPlane) Wait() error {
	<-c.done
	return c.err
}

// Done is closed once the control plane has stopped.
func (c *ControlPlane) Done() <-chan struct{} { return c.done }

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

func lockDataDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "gcp.lock"), os.O_CREATE|os.O_RDWR, 0o600)
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

// releaseStartupGarbage returns the memory that building the servers
// allocated and dropped (OpenAPI specs, schemes, handlers: about as much
// again as they keep) to the operating system once the server is ready,
// instead of leaving it to the runtime's scavenger, which returns it over
// minutes. It costs one garbage collection, once.
func releaseStartupGarbage(ctx context.Context, ready func(context.Context) bool) {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return ready(ctx), nil
	})
	if err == nil {
		debug.FreeOSMemory()
	}
}
