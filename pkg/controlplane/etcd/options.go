package etcd

import (
	"errors"
	"fmt"
	"net/url"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	cliflag "k8s.io/component-base/cli/flag"
)

// DefaultDataDir is where `gcp etcd` keeps the member's data unless
// --data-dir says otherwise; it is where `gcp start` keeps its etcd too
// (allinone.EtcdDir of allinone.DefaultDataDir, which a test holds equal).
const DefaultDataDir = ".gcp/etcd"

// DefaultListenClientURL is the client URL `gcp etcd` listens on unless
// --listen-client-urls says otherwise: loopback, TLS, client certificates.
const DefaultListenClientURL = "https://127.0.0.1:2379"

// Options are the flags of `gcp etcd`: a member's Config, and the rule
// that a member others reach over TCP needs TLS with a trusted CA
// (Validate). A program that runs a member of a cluster starts from
// NewOptions, as `gcp etcd` does, and gets the same rule.
type Options struct {
	Config
}

// NewOptions returns the defaults of `gcp etcd`: a member in
// DefaultDataDir serving clients on DefaultListenClientURL.
func NewOptions() *Options {
	cfg := DefaultConfig(DefaultDataDir)
	cfg.ListenClientURLs = []string{DefaultListenClientURL}
	// A member of a cluster keeps etcd's raft log defaults: a follower that
	// falls behind catches up from those entries rather than a snapshot of
	// the whole database.
	cfg.SnapshotCount, cfg.SnapshotCatchUpEntries = 0, 0
	return &Options{Config: cfg}
}

// AddFlags adds the member and cluster flags to the "etcd" section and the
// certificate flags to the "TLS" section. Names follow etcd's own flags.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) { AddConfigFlags(&o.Config, fss) }

// AddConfigFlags adds the flags of `gcp etcd` that set c to fss, with c's
// values as their defaults; `gcp start` takes some of them for its
// embedded member.
func AddConfigFlags(c *Config, fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("etcd")
	fs.StringVar(&c.Name, "name", c.Name, "Human-readable name of this member, unique in the cluster.")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "Directory of the member's data; created with mode 0700, an existing one is tightened to 0700.")
	fs.StringSliceVar(&c.ListenClientURLs, "listen-client-urls", c.ListenClientURLs,
		"Comma-separated URLs to serve clients on: https://IP:port (needs --cert-file, --key-file and --trusted-ca-file, so every client needs a certificate from that CA), "+
			"or unix:///absolute/path/to/socket (no TLS; guard the socket's directory). Plain http:// is refused.")
	fs.StringSliceVar(&c.AdvertiseClientURLs, "advertise-client-urls", c.AdvertiseClientURLs,
		"Comma-separated client URLs to publish to the cluster and print; defaults to --listen-client-urls.")
	fs.StringSliceVar(&c.ListenPeerURLs, "listen-peer-urls", c.ListenPeerURLs,
		"Comma-separated https://IP:port URLs to serve other members on (needs --peer-cert-file, --peer-key-file and --peer-trusted-ca-file). "+
			"Empty means no peer listener: a single member that cannot be joined.")
	fs.StringSliceVar(&c.InitialAdvertisePeerURLs, "initial-advertise-peer-urls", c.InitialAdvertisePeerURLs,
		"Comma-separated peer URLs to announce to the cluster; defaults to --listen-peer-urls.")
	fs.StringVar(&c.InitialCluster, "initial-cluster", c.InitialCluster,
		"Bootstrap cluster as name=peerURL,...; empty means this member alone.")
	fs.StringVar(&c.InitialClusterState, "initial-cluster-state", c.InitialClusterState,
		`"new" to bootstrap a new cluster, "existing" to join one.`)
	fs.StringSliceVar(&c.ListenMetricsURLs, "listen-metrics-urls", c.ListenMetricsURLs,
		"Comma-separated URLs to serve /metrics, /health, /livez and /readyz on without client certificates, for probes and scrapers: "+
			"http://127.0.0.1:port (loopback only), or https://IP:port with --cert-file. Empty means only the client URLs serve them.")
	fs.Int64Var(&c.QuotaBackendBytes, "quota-backend-bytes", c.QuotaBackendBytes,
		"Maximum size of the member's database in bytes (etcd's default, 2 GiB, when 0). Past it the cluster raises the NOSPACE alarm "+
			"and refuses writes until space is freed and the alarm disarmed: see docs/operations.md.")
	bytesVar(fs, &c.MinFreeDisk, "min-free-disk", minFreeDiskUsage)
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "etcd's own log level, debug, info, warn or error: a floor under the verbosity (-v) that etcd's lines need (warnings at 0, info at 2, debug at 4). Empty: -v alone decides.")

	tls := fss.FlagSet("TLS")
	tls.StringVar(&c.ClientTLS.CertFile, "cert-file", c.ClientTLS.CertFile, "Serving certificate for https:// and unixs:// client URLs.")
	tls.StringVar(&c.ClientTLS.KeyFile, "key-file", c.ClientTLS.KeyFile, "Key of --cert-file.")
	tls.StringVar(&c.ClientTLS.TrustedCAFile, "trusted-ca-file", c.ClientTLS.TrustedCAFile,
		"CA bundle that signs client certificates; when set, every client must present one.")
	tls.BoolVar(&c.ClientTLS.ClientCertAuth, "client-cert-auth", c.ClientTLS.ClientCertAuth,
		"Require client certificates and, when etcd auth is on, take the user from the certificate's common name (needs --trusted-ca-file).")
	tls.StringVar(&c.PeerTLS.CertFile, "peer-cert-file", c.PeerTLS.CertFile, "Certificate for peer URLs, used both to serve and to connect to peers.")
	tls.StringVar(&c.PeerTLS.KeyFile, "peer-key-file", c.PeerTLS.KeyFile, "Key of --peer-cert-file.")
	tls.StringVar(&c.PeerTLS.TrustedCAFile, "peer-trusted-ca-file", c.PeerTLS.TrustedCAFile,
		"CA bundle that signs peer certificates; every peer must present one.")
	tls.BoolVar(&c.PeerTLS.ClientCertAuth, "peer-client-cert-auth", c.PeerTLS.ClientCertAuth,
		"Require peer certificates signed by --peer-trusted-ca-file (setting that file alone already requires them).")
}

// Validate returns every problem with the options: the member's own checks
// (Config.Validate) plus the rule that TCP listeners need TLS with a
// trusted CA.
func (o *Options) Validate() []error {
	var errs []error
	for _, raw := range o.ListenClientURLs {
		errs = append(errs, checkListener("--listen-client-urls", raw, o.ClientTLS.TrustedCAFile, "--trusted-ca-file",
			"use https:// with client certificates, or a unix:// socket")...)
	}
	for _, raw := range o.ListenPeerURLs {
		errs = append(errs, checkListener("--listen-peer-urls", raw, o.PeerTLS.TrustedCAFile, "--peer-trusted-ca-file",
			"use https:// with peer certificates")...)
	}
	if err := o.Config.Validate(); err != nil {
		var agg utilerrors.Aggregate
		if errors.As(err, &agg) {
			errs = append(errs, agg.Errors()...)
		} else {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkListener refuses plaintext TCP, and https without a CA to check the
// other side's certificate. Malformed URLs are left to Config.Validate.
func checkListener(flag, raw, trustedCA, caFlag, hint string) []error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	switch {
	case u.Scheme == "http":
		return []error{fmt.Errorf("%s %q: plain http:// lets anyone who reaches the port read and write everything; %s", flag, raw, hint)}
	case u.Scheme == "https" && trustedCA == "":
		return []error{fmt.Errorf("%s %q needs %s, so that only holders of certificates from that CA connect", flag, raw, caFlag)}
	}
	return nil
}
