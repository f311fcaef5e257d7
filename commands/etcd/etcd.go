// Package etcd is `gcp etcd`: one etcd member, for deployments that run
// etcd apart from `gcp apiserver` (which then takes --etcd-servers).
//
// It is secure by default: TCP client and peer URLs must be https:// with a
// trusted CA, so every client and peer needs a certificate from that CA;
// without TLS, clients can only use a unix:// socket, which file
// permissions guard.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/term"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	gcpetcd "github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/pkg/controlplane/logging"
	"github.com/gcp-project/gcp/pkg/controlplane/sdnotify"
)

// DefaultDataDir is where `gcp etcd` keeps the member's data unless
// --data-dir says otherwise; it is where `gcp start` keeps its etcd too.
const DefaultDataDir = allinone.DefaultDataDir + "/etcd"

// DefaultListenClientURL is the client URL `gcp etcd` listens on unless
// --listen-client-urls says otherwise: loopback, TLS, client certificates.
const DefaultListenClientURL = "https://127.0.0.1:2379"

// Options are the flags of `gcp etcd`: the embedded member's Config.
type Options struct {
	gcpetcd.Config
}

// NewOptions returns the defaults of `gcp etcd`.
func NewOptions() *Options {
	cfg := gcpetcd.DefaultConfig(DefaultDataDir)
	cfg.ListenClientURLs = []string{DefaultListenClientURL}
	return &Options{Config: cfg}
}

// AddFlags adds the member and cluster flags to the "etcd" section and the
// certificate flags to the "TLS" section. Names follow etcd's own flags.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) { AddConfigFlags(&o.Config, fss) }

// AddConfigFlags adds the flags of `gcp etcd` that set o to fss, with
// o's values as their defaults; `gcp start` takes some of them.
func AddConfigFlags(o *gcpetcd.Config, fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("etcd")
	fs.StringVar(&o.Name, "name", o.Name, "Human-readable name of this member, unique in the cluster.")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory of the member's data; created with mode 0700, an existing one is tightened to 0700.")
	fs.StringSliceVar(&o.ListenClientURLs, "listen-client-urls", o.ListenClientURLs,
		"Comma-separated URLs to serve clients on: https://IP:port (needs --cert-file, --key-file and --trusted-ca-file, so every client needs a certificate from that CA), "+
			"or unix:///absolute/path/to/socket (no TLS; guard the socket's directory). Plain http:// is refused.")
	fs.StringSliceVar(&o.AdvertiseClientURLs, "advertise-client-urls", o.AdvertiseClientURLs,
		"Comma-separated client URLs to publish to the cluster and print; defaults to --listen-client-urls.")
	fs.StringSliceVar(&o.ListenPeerURLs, "listen-peer-urls", o.ListenPeerURLs,
		"Comma-separated https://IP:port URLs to serve other members on (needs --peer-cert-file, --peer-key-file and --peer-trusted-ca-file). "+
			"Empty means no peer listener: a single member that cannot be joined.")
	fs.StringSliceVar(&o.InitialAdvertisePeerURLs, "initial-advertise-peer-urls", o.InitialAdvertisePeerURLs,
		"Comma-separated peer URLs to announce to the cluster; defaults to --listen-peer-urls.")
	fs.StringVar(&o.InitialCluster, "initial-cluster", o.InitialCluster,
		"Bootstrap cluster as name=peerURL,...; empty means this member alone.")
	fs.StringVar(&o.InitialClusterState, "initial-cluster-state", o.InitialClusterState,
		`"new" to bootstrap a new cluster, "existing" to join one.`)
	fs.StringSliceVar(&o.ListenMetricsURLs, "listen-metrics-urls", o.ListenMetricsURLs,
		"Comma-separated URLs to serve /metrics, /health, /livez and /readyz on without client certificates, for probes and scrapers: "+
			"http://127.0.0.1:port (loopback only), or https://IP:port with --cert-file. Empty means only the client URLs serve them.")
	fs.Int64Var(&o.QuotaBackendBytes, "quota-backend-bytes", o.QuotaBackendBytes,
		"Maximum size of the member's database in bytes (etcd's default, 2 GiB, when 0). Past it the cluster raises the NOSPACE alarm "+
			"and refuses writes until space is freed and the alarm disarmed: see docs/operations.md.")
	BytesVar(fs, &o.MinFreeDisk, "min-free-disk", MinFreeDiskUsage)
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "etcd's own log level, debug, info, warn or error: a floor under the verbosity (-v) that etcd's lines need (warnings at 0, info at 2, debug at 4). Empty: -v alone decides.")

	tls := fss.FlagSet("TLS")
	tls.StringVar(&o.ClientTLS.CertFile, "cert-file", o.ClientTLS.CertFile, "Serving certificate for https:// and unixs:// client URLs.")
	tls.StringVar(&o.ClientTLS.KeyFile, "key-file", o.ClientTLS.KeyFile, "Key of --cert-file.")
	tls.StringVar(&o.ClientTLS.TrustedCAFile, "trusted-ca-file", o.ClientTLS.TrustedCAFile,
		"CA bundle that signs client certificates; when set, every client must present one.")
	tls.BoolVar(&o.ClientTLS.ClientCertAuth, "client-cert-auth", o.ClientTLS.ClientCertAuth,
		"Require client certificates and, when etcd auth is on, take the user from the certificate's common name (needs --trusted-ca-file).")
	tls.StringVar(&o.PeerTLS.CertFile, "peer-cert-file", o.PeerTLS.CertFile, "Certificate for peer URLs, used both to serve and to connect to peers.")
	tls.StringVar(&o.PeerTLS.KeyFile, "peer-key-file", o.PeerTLS.KeyFile, "Key of --peer-cert-file.")
	tls.StringVar(&o.PeerTLS.TrustedCAFile, "peer-trusted-ca-file", o.PeerTLS.TrustedCAFile,
		"CA bundle that signs peer certificates; every peer must present one.")
	tls.BoolVar(&o.PeerTLS.ClientCertAuth, "peer-client-cert-auth", o.PeerTLS.ClientCertAuth,
		"Require peer certificates signed by --peer-trusted-ca-file (setting that file alone already requires them).")
}

// Validate returns every problem with the flags: the member's own checks
// plus the rule that TCP listeners need TLS with a trusted CA.
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

// NewCommand returns `etcd`; it serves until ctx is done. name is the
// product's, as main's root command is called.
func NewCommand(ctx context.Context, name string) *cobra.Command {
	o := NewOptions()
	fss := &cliflag.NamedFlagSets{}
	o.AddFlags(fss)
	logs := logging.NewOptions()
	logging.AddFlags(logs, fss)
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run an etcd member for " + name + " apiservers",
		Long: "Run one etcd member, for " + name + " apiservers started with --etcd-servers. " +
			"TCP client and peer URLs need TLS and a trusted CA, so every client and peer presents a certificate; " +
			"unix:// client sockets need no TLS.\n\nOperating a running cluster (each has --help): `" + name + " etcd member list|add|promote|remove`, " +
			"`" + name + " etcd status`, `" + name + " etcd move-leader`, `" + name + " etcd compact`, `" + name + " etcd defrag`, `" + name +
			" etcd alarm list|disarm`, `" + name + " etcd snapshot save|status|restore`.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := logging.Apply(logs); err != nil {
				return err
			}
			if errs := o.Validate(); len(errs) > 0 {
				return utilerrors.NewAggregate(errs)
			}
			return gcpetcd.Run(ctx, o.Config, sdnotify.TakeFromEnv())
		},
	}
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	// The member's flag sections are its own; subcommands use cobra's help.
	plain := &cobra.Command{}
	for _, sub := range []*cobra.Command{newMemberCommand(ctx, name), newStatusCommand(ctx, name), newMoveLeaderCommand(ctx, name), newCompactCommand(ctx, name),
		newDefragCommand(ctx, name), newAlarmCommand(ctx, name), newSnapshotCommand(ctx, name)} {
		sub.SetHelpFunc(plain.HelpFunc())
		sub.SetUsageFunc(plain.UsageFunc())
		cmd.AddCommand(sub)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *fss, cols)
	return cmd
}
