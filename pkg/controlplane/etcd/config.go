package etcd

import (
	"io"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

const (
	// DefaultName is the member name used when Config.Name is empty. It is
	// not etcd's "default", which etcd warns about on every start.
	DefaultName = "gcp"
	// DefaultLogLevel, empty, lets the process's klog verbosity alone say
	// which of etcd's lines are written (see logging.ZapCore): errors and
	// warnings at -v=0, info from -v=2, debug from -v=4.
	DefaultLogLevel = ""
	// DefaultReadyTimeout bounds how long Start waits for etcd to serve.
	DefaultReadyTimeout = time.Minute
	// ClusterStateNew bootstraps a new cluster (etcd's --initial-cluster-state=new).
	ClusterStateNew = embed.ClusterStateFlagNew
	// ClusterStateExisting joins an existing cluster.
	ClusterStateExisting = embed.ClusterStateFlagExisting

	// maxSocketPath is the longest unix socket path Linux accepts: sun_path
	// holds 108 bytes including the terminating NUL.
	maxSocketPath = 107

	// noPeerURL is the peer URL a member without a peer listener advertises.
	// etcd needs one to derive the member's identity; port 0 makes it plain
	// that nothing listens there, and a single member never dials itself.
	noPeerURL = "http://127.0.0.1:0"
)

// TLSInfo names the certificate files of one side of etcd (clients or peers).
type TLSInfo struct {
	// CertFile and KeyFile are the server's certificate and key, required
	// for https:// and unixs:// URLs.
	CertFile string
	KeyFile  string
	// TrustedCAFile verifies the certificates that clients (or peers)
	// present; when set, etcd requires every connection to present one.
	TrustedCAFile string
	// ClientCertAuth requires certificates signed by TrustedCAFile (etcd's
	// --client-cert-auth / --peer-client-cert-auth). TrustedCAFile alone
	// already does; this also lets etcd auth take the user from the
	// certificate's common name.
	ClientCertAuth bool
}

func (t TLSInfo) transport() transport.TLSInfo {
	return transport.TLSInfo{
		CertFile:       t.CertFile,
		KeyFile:        t.KeyFile,
		TrustedCAFile:  t.TrustedCAFile,
		ClientCertAuth: t.ClientCertAuth,
	}
}

// Config describes one etcd member. Field names follow etcd's flags, and
// validation errors name fields by those flags (--data-dir, ...) so that
// `gcp etcd` and library callers read the same messages.
type Config struct {
	// Name is the member name; empty means DefaultName.
	Name string
	// DataDir holds the member's WAL and database. Start creates it with
	// mode 0700 and tightens an existing one to 0700.
	DataDir string

	// ListenClientURLs are where clients connect: http://IP:port,
	// https://IP:port, or a unix socket from UnixSocketURL (unixs:// for TLS
	// over a socket).
	ListenClientURLs []string
	// AdvertiseClientURLs are the client URLs published to the cluster;
	// empty means ListenClientURLs.
	AdvertiseClientURLs []string

	// ListenPeerURLs are where other members connect (http or https only).
	// Empty means no peer listener at all: a single member that cannot be
	// joined and has no peer port to protect.
	ListenPeerURLs []string
	// InitialAdvertisePeerURLs are the peer URLs this member announces;
	// empty means ListenPeerURLs.
	InitialAdvertisePeerURLs []string
	// InitialCluster is "name=peerURL,..." for bootstrapping; empty means
	// this member alone.
	InitialCluster string
	// InitialClusterState is ClusterStateNew or ClusterStateExisting; empty
	// means new.
	InitialClusterState string

	// ListenMetricsURLs serve /metrics, /health, /livez and /readyz apart
	// from the client URLs, as kubeadm's etcd does on http://127.0.0.1:2381,
	// so probes and scrapers need no client certificate: http:// on a
	// loopback address, or https:// with ClientTLS's certificate. Empty means
	// none (the client URLs serve them too, behind client TLS).
	ListenMetricsURLs []string

	// ClientTLS secures https:// and unixs:// client URLs.
	ClientTLS TLSInfo
	// PeerTLS secures https:// peer URLs.
	PeerTLS TLSInfo

	// QuotaBackendBytes caps the database size; past it etcd raises the
	// NOSPACE alarm and takes no more writes until it is disarmed. 0 means
	// etcd's default of 2 GiB, which kubeadm's etcd runs with too.
	QuotaBackendBytes int64
	// MinFreeDisk is the free space, in bytes, that the file system of
	// DataDir keeps: below it the member raises etcd's NOSPACE alarm, so
	// the cluster refuses writes (reads and deletes go on) before etcd
	// would stop on a full disk, and it disarms that alarm by itself once
	// a quarter more than MinFreeDisk is free again. 0 watches nothing;
	// DefaultConfig sets DefaultMinFreeDisk.
	MinFreeDisk int64
	// DatabaseChecked says that the caller has run CheckDatabase on
	// DatabasePath(DataDir) itself, and holds the data dir so that nothing
	// has written the file since, so Start does not walk it again (30–100
	// ms on a 220 MiB database). `gcp start` checks it before reading its
	// Secrets from the file, well before the member starts.
	DatabaseChecked bool
	// LogLevel is etcd's own log level (debug, info, warn, error): a floor
	// below which etcd's lines are never written, on top of the klog
	// verbosity their level maps to; empty means no floor of its own.
	LogLevel string
	// LogOutput receives etcd's own log, in its JSON form, from LogLevel
	// (warn if empty) up; nil means through klog, in the process's format
	// and at its verbosity. The test server keeps a quiet server's etcd
	// log with the rest of its lines.
	LogOutput io.Writer
	// ReadyTimeout bounds how long Start waits for the member to serve;
	// 0 means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// HeartbeatInterval and ElectionTimeout are etcd's --heartbeat-interval
	// and --election-timeout, in whole milliseconds; 0 means etcd's
	// defaults (100 ms and 1 s). The election timeout must be at least five
	// heartbeats. A single member that restarts elects itself after a random
	// 1 to 10 heartbeats (etcd skips the rest of the election timeout), so
	// shorter ones make it serve sooner.
	HeartbeatInterval, ElectionTimeout time.Duration
	// UnsafeNoFsync is etcd's --unsafe-no-fsync: the member never syncs
	// its WAL or database to disk, so a write costs no fsync (a few
	// milliseconds each on a real disk, one per write the server makes
	// while it bootstraps). A machine crash can then lose or corrupt the
	// data; a member that stops or crashes keeps it. Only for data that is
	// thrown away, as the test server's is.
	UnsafeNoFsync bool
	// SnapshotCount and SnapshotCatchUpEntries are etcd's --snapshot-count
	// and --snapshot-catchup-entries; 0 means etcd's defaults (10,000 and
	// 5,000). Between two raft snapshots a member keeps every entry since
	// the last one, and the catch-up entries before it, in memory: with
	// etcd's defaults up to 15,000 writes, which with large objects (CRDs of
	// tens of KiB) was 139 MiB of gcp start's heap for 1,539 CRDs. A member
	// without peers has no follower to catch up, so DefaultConfig keeps far
	// fewer (PrivateSnapshotCount, PrivateSnapshotCatchUpEntries).
	SnapshotCount, SnapshotCatchUpEntries uint64
}

// PrivateSnapshotCount and PrivateSnapshotCatchUpEntries bound the raft
// log a private single member (DefaultConfig) keeps in memory to 1,100
// entries: a snapshot (a small file: the member's membership; the data is
// in the database) every 1,000 writes.
const (
	PrivateSnapshotCount          = 1000
	PrivateSnapshotCatchUpEntries = 100
)

// DefaultConfig returns a private single member in dataDir: clients on a
// unix socket inside the (0700) data dir, no TCP port and no peer listener.
func DefaultConfig(dataDir string) Config {
	return Config{
		Name:                DefaultName,
		DataDir:             dataDir,
		ListenClientURLs:    []string{UnixSocketURL(filepath.Join(dataDir, "etcd.sock"))},
		InitialClusterState: ClusterStateNew,
		MinFreeDisk:         DefaultMinFreeDisk,
		LogLevel:            DefaultLogLevel,
		ReadyTimeout:        DefaultReadyTimeout,

		SnapshotCount:          PrivateSnapshotCount,
		SnapshotCatchUpEntries: PrivateSnapshotCatchUpEntries,
	}
}

// UnixSocketURL returns the URL of a unix socket at path, made absolute:
// unix:///abs/path. etcd listens on it, and the same string works as a
// clientv3 endpoint and as a k8s.io/apiserver --etcd-servers value.
func UnixSocketURL(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return "unix://" + path
}

func (c Config) name() string {
	if c.Name == "" {
		return DefaultName
	}
	return c.Name
}

func (c Config) logLevel() string {
	if c.LogLevel == "" {
		return DefaultLogLevel
	}
	return c.LogLevel
}

func (c Config) readyTimeout() time.Duration {
	if c.ReadyTimeout == 0 {
		return DefaultReadyTimeout
	}
	return c.ReadyTimeout
}

// advertiseClientURLs are the URLs clients should use.
func (c Config) advertiseClientURLs() []string {
	if len(c.AdvertiseClientURLs) > 0 {
		return append([]string(nil), c.AdvertiseClientURLs...)
	}
	return append([]string(nil), c.ListenClientURLs...)
}

// embedConfig translates a validated c into etcd's configuration.
func (c Config) embedConfig() (*embed.Config, error) {
	ec := embed.NewConfig()
	ec.Name = c.name()
	ec.Dir = c.DataDir
	// etcd's own use of its level (gRPC's logging and tracing, pprof at
	// debug); the lines themselves are setLogger's.
	ec.LogLevel = c.logLevel()
	if ec.LogLevel == "" {
		ec.LogLevel = "info"
	}
	ec.QuotaBackendBytes = c.QuotaBackendBytes
	ec.UnsafeNoFsync = c.UnsafeNoFsync
	ec.ClientTLSInfo = c.ClientTLS.transport()
	ec.PeerTLSInfo = c.PeerTLS.transport()
	if c.HeartbeatInterval != 0 {
		ec.TickMs = uint(c.HeartbeatInterval.Milliseconds())
	}
	if c.ElectionTimeout != 0 {
		ec.ElectionMs = uint(c.ElectionTimeout.Milliseconds())
	}
	if c.SnapshotCount != 0 {
		ec.SnapshotCount = c.SnapshotCount
	}
	if c.SnapshotCatchUpEntries != 0 {
		ec.SnapshotCatchUpEntries = c.SnapshotCatchUpEntries
	}

	var err error
	if ec.ListenMetricsUrls, err = toURLs(c.ListenMetricsURLs); err != nil {
		return nil, err
	}
	if ec.ListenClientUrls, err = toURLs(c.ListenClientURLs); err != nil {
		return nil, err
	}
	if ec.AdvertiseClientUrls, err = toURLs(c.advertiseClientURLs()); err != nil {
		return nil, err
	}
	if ec.ListenPeerUrls, err = toURLs(c.ListenPeerURLs); err != nil {
		return nil, err
	}
	advertisePeers := c.InitialAdvertisePeerURLs
	if len(advertisePeers) == 0 {
		advertisePeers = c.ListenPeerURLs
	}
	if len(advertisePeers) == 0 {
		advertisePeers = []string{noPeerURL}
	}
	if ec.AdvertisePeerUrls, err = toURLs(advertisePeers); err != nil {
		return nil, err
	}
	ec.InitialCluster = c.InitialCluster
	if ec.InitialCluster == "" {
		ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	}
	ec.ClusterState = c.InitialClusterState
	if ec.ClusterState == "" {
		ec.ClusterState = ClusterStateNew
	}
	return ec, nil
}

// etcd's defaults for --heartbeat-interval and --election-timeout.
const (
	defaultHeartbeat = 100 * time.Millisecond
	defaultElection  = time.Second
)

// unixSocketPaths returns the socket files of c's unix client URLs.
func (c Config) unixSocketPaths() []string {
	var paths []string
	for _, raw := range c.ListenClientURLs {
		if u, err := url.Parse(raw); err == nil && isUnix(u.Scheme) {
			paths = append(paths, u.Path)
		}
	}
	return paths
}

func isUnix(scheme string) bool { return scheme == "unix" || scheme == "unixs" }

func toURLs(raws []string) ([]url.URL, error) {
	urls := make([]url.URL, 0, len(raws))
	for _, raw := range raws {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, err
		}
		urls = append(urls, *u)
	}
	return urls, nil
}
