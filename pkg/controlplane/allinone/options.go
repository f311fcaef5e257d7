package allinone

import (
	"errors"
	"fmt"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	netutils "k8s.io/utils/net"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// DefaultDataDir is the data dir of `gcp start`, and where the commands
// that read one (kubectl, snapshot, etcd, pki) look unless told otherwise:
// relative to the working directory.
const DefaultDataDir = ".gcp"

// DefaultSnapshotRetention is how many scheduled snapshots are kept.
const DefaultSnapshotRetention = 5

// Options configure an all-in-one control plane. NewOptions gives the
// defaults of `gcp start`, which sets these fields from its flags.
type Options struct {
	// DataDir holds the PKI, the etcd data and admin.kubeconfig (mode 0700).
	DataDir string
	// TLSSANs are extra names or IPs for the serving certificate.
	TLSSANs []string
	// APIServer are the API server's options, those of `gcp apiserver`:
	// serving address and port (0 picks a free one), runtime config,
	// admission, audit, timeouts and the rest. Start completes them from
	// the data dir (see completeAPIServer): the serving certificate, the
	// client CAs, the service account keys and issuer, the front proxy's
	// certificate, the embedded etcd, and the audit policy and encryption
	// config it keeps there; whatever those fields held is replaced. Nil
	// means NewOptions().APIServer.
	APIServer *options.Options
	// SecretsEncryption encrypts Secrets in etcd with a key kept in the
	// PKI dir (EncryptionConfigName), made on the first start. NewOptions
	// turns it on.
	SecretsEncryption bool
	// Etcd is the embedded member's configuration, that of `gcp etcd`:
	// its database quota (QuotaBackendBytes), the free disk it keeps
	// (MinFreeDisk: below it writes get 507 while reads and deletes go
	// on), its log level and timing. Start sets where it keeps its data and
	// listens: the data dir's etcd/ and a unix socket there. Nil means
	// NewOptions().Etcd.
	Etcd *etcd.Config
	// SnapshotInterval, when positive, takes a snapshot of etcd every
	// interval into SnapshotDir (empty: DefaultSnapshotDir) and keeps the
	// newest SnapshotRetention (NewOptions: DefaultSnapshotRetention).
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
	// Ephemeral says the data dir is thrown away when the control plane
	// stops, as the test server's own temporary one is, which lets Start
	// go faster. It writes the data dir without syncing it to disk: the
	// PKI and kubeconfigs (pki.Options.NoSync) and etcd's WAL and database
	// (etcd.Config.UnsafeNoFsync); a machine crash may lose or corrupt
	// what was written, a stop or a crash of the process does not. And a
	// new etcd member starts while the API server's configuration is
	// built, instead of after it: a flag that only the configuration
	// checks then fails after etcd has started and stopped, which logs a
	// few lines of its own (a failed start still removes the member).
	// `gcp start` keeps it off.
	Ephemeral bool
	// KeepStartupMemory leaves what building the servers allocated and
	// dropped to the Go runtime once the control plane is ready, instead
	// of returning it to the operating system (releaseStartupGarbage): that
	// is a forced garbage collection of the whole process, and a process
	// that goes on to start more servers, as a test binary does, then
	// takes the memory back page by page. The test server sets it; `gcp
	// start`, one control plane for the process's life, keeps it off.
	KeepStartupMemory bool
}

// NewOptions returns the defaults of `gcp start`, the only place they are
// set: the API server's own (options.NewOptions) served on loopback, with
// Secrets encryption, the free disk watch, and the
// controllers on by default.
func NewOptions() *Options {
	return &Options{
		DataDir:           DefaultDataDir,
		APIServer:         newAPIServerOptions(),
		Etcd:              newEtcdConfig(),
		SecretsEncryption: true,
		SnapshotRetention: DefaultSnapshotRetention,
		Controllers:       []string{"*"},
	}
}

// newAPIServerOptions are the API server's defaults in one process.
func newAPIServerOptions() *options.Options {
	o := options.NewOptions()
	// One process owns a data dir on one machine: serve loopback unless
	// told otherwise.
	o.SecureServing.BindAddress = netutils.ParseIPSloppy("127.0.0.1")
	return o
}

// newEtcdConfig is the embedded member's configuration in one process.
func newEtcdConfig() *etcd.Config {
	cfg := etcd.DefaultConfig(EtcdDir(DefaultDataDir))
	// One member with no peers: a restart elects itself after a random 1 to
	// 10 heartbeats, 0.1–1 s with etcd's 100 ms, which was most of a warm
	// start's time and spread (docs/performance.md). With 20 ms and an
	// election timeout of five of them (etcd's minimum ratio) it is
	// 20–100 ms. Faster ticks cost idle CPU: 1.6 % of a core at 50 ms, 1.9 %
	// at 20 ms, 2.6 % at 10 ms, which gains little more. A member with no
	// peers cannot lose its leadership to a slow tick, so the short timeout
	// risks nothing; etcd's request timeout becomes 5.2 s (7 s).
	cfg.HeartbeatInterval, cfg.ElectionTimeout = 20*time.Millisecond, 100*time.Millisecond
	return &cfg
}

// Validate checks the options Start's own steps use; the API server's are
// checked once completed, before anything starts.
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	// Nil API server or etcd options are NewOptions', which Start fills in.
	if ao := o.APIServer; ao != nil {
		if s := ao.SecureServing; s.BindAddress == nil {
			errs = append(errs, errors.New("--bind-address must be an IP address"))
		} else if s.BindPort < 0 || s.BindPort > 65535 {
			errs = append(errs, fmt.Errorf("--secure-port %d is not a port (0-65535)", s.BindPort))
		}
	}
	if e := o.Etcd; e != nil {
		if e.QuotaBackendBytes < 0 {
			errs = append(errs, fmt.Errorf("--quota-backend-bytes %d is negative", e.QuotaBackendBytes))
		}
		if e.MinFreeDisk < 0 {
			errs = append(errs, fmt.Errorf("--min-free-disk %d is negative", e.MinFreeDisk))
		}
	}
	if o.SnapshotInterval < 0 {
		errs = append(errs, fmt.Errorf("--snapshot-interval %s is negative", o.SnapshotInterval))
	}
	if o.SnapshotInterval > 0 && o.SnapshotRetention < 1 {
		errs = append(errs, fmt.Errorf("--snapshot-retention %d: keep at least one snapshot", o.SnapshotRetention))
	}
	return utilerrors.NewAggregate(errs)
}
