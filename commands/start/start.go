// Package start is `gcp start`: the whole control plane in one process,
// with zero flags needed.
package start

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/internal/gcheadroom"
	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/pkg/controlplane/logging"
	"github.com/gcp-project/gcp/pkg/controlplane/sdnotify"
	"github.com/gcp-project/gcp/pkg/controlplane/version"
	"github.com/gcp-project/gcp/pkg/layering"
)

// DefaultDataDir is where `gcp start` keeps its state.
const DefaultDataDir = allinone.DefaultDataDir

// NewOptions returns the defaults of `start` for the composition's APIs:
// allinone.NewOptions, with the composition's admission plugins in the API
// server's options, as allinone.Start adds them.
func NewOptions(comp composition.Composition) *allinone.Options {
	o := allinone.NewOptions()
	// The stack's own admission plugins are flags' values too.
	o.APIServer.AddAdmissionPlugins(comp.AdmissionPlugins)
	return o
}

// derivedFlags are the flags of `gcp apiserver` that `gcp start` does not
// take: Start derives their values from the data dir (its PKI, its etcd
// socket and encryption config) and listens on its port itself.
var derivedFlags = []string{
	"etcd-servers", "etcd-servers-overrides", "etcd-cafile", "etcd-certfile", "etcd-keyfile", "storage-backend",
	"tls-cert-file", "tls-private-key-file", "cert-dir",
	"client-ca-file", "requestheader-client-ca-file", "requestheader-allowed-names",
	"proxy-client-cert-file", "proxy-client-key-file",
	"service-account-issuer", "service-account-key-file", "service-account-signing-key-file",
	"encryption-provider-config",
	"permit-port-sharing", "permit-address-sharing",
}

// etcdFlagsInOneProcess are the flags of `gcp etcd` that `gcp start` takes
// for its embedded member; the others (data dir, URLs, TLS, cluster) it
// derives from its data dir, or make no sense for a member with no peers.
var etcdFlagsInOneProcess = []string{"quota-backend-bytes", "min-free-disk", "log-level"}

// AddFlags adds the flags of `start` to fss: its own, then every flag of
// `apiserver` and `etcd` that makes sense in one process, and `controllers`'
// --controllers choosing among comp's controllers, in the same sections,
// with the same names and help, and the defaults in o. name is the
// product's, as main's root command is called.
func AddFlags(o *allinone.Options, name string, comp composition.Composition, fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("start")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the PKI, the etcd data and admin.kubeconfig; created with mode 0700.")
	fs.StringSliceVar(&o.TLSSANs, "tls-san", o.TLSSANs, "Extra DNS names or IP addresses for the serving certificate.")
	fs.BoolVar(&o.SecretsEncryption, "secrets-encryption", o.SecretsEncryption,
		"Encrypt Secrets in etcd with a key kept in <data-dir>/pki/"+allinone.EncryptionConfigName+" (made on the first start). See docs/security.md for rotating it.")

	apiserverFlags := cliflag.NamedFlagSets{}
	o.APIServer.AddFlags(&apiserverFlags)
	for _, section := range apiserverFlags.Order {
		to := fss.FlagSet(section)
		apiserverFlags.FlagSets[section].VisitAll(func(f *pflag.Flag) {
			if !slices.Contains(derivedFlags, f.Name) {
				to.AddFlag(f)
			}
		})
	}
	etcdFlags := cliflag.NamedFlagSets{}
	etcd.AddConfigFlags(o.Etcd, &etcdFlags)
	for _, name := range etcdFlagsInOneProcess {
		fss.FlagSet("embedded etcd").AddFlag(etcdFlags.FlagSet("etcd").Lookup(name))
	}
	// What start does differently with two of them.
	if f := fss.FlagSet("auditing").Lookup("audit-policy-file"); f != nil {
		f.Usage += " Empty: <data-dir>/" + allinone.AuditPolicyName + ", a default written the first time it is needed."
	}
	if f := fss.FlagSet("secure serving").Lookup("secure-port"); f != nil {
		f.Usage += " In " + name + " start, 0 picks a free port."
	}
	// The same flag as `controllers --controllers`, setting o.Controllers:
	// a controller manager in one process has nothing else to configure.
	controllersFlags := cliflag.NamedFlagSets{}
	controllers.NewOptions(comp.Controllers).AddFlags(&controllersFlags)
	selection := controllersFlags.FlagSet("generic").Lookup("controllers")
	fss.FlagSet("controllers").StringSliceVar(&o.Controllers, selection.Name, o.Controllers, selection.Usage)

	snap := fss.FlagSet("snapshots")
	snap.DurationVar(&o.SnapshotInterval, "snapshot-interval", o.SnapshotInterval,
		"Take a snapshot of etcd this often (e.g. 12h, as k3s does); 0 takes none. "+name+" snapshot lists, saves and restores them.")
	snap.IntVar(&o.SnapshotRetention, "snapshot-retention", o.SnapshotRetention, "How many scheduled snapshots to keep; older ones are deleted.")
	snap.StringVar(&o.SnapshotDir, "snapshot-dir", o.SnapshotDir, "Directory for snapshots (mode 0700); empty means <data-dir>/snapshots.")
	snap.BoolVar(&o.SnapshotCompress, "snapshot-compress", o.SnapshotCompress, "Gzip the scheduled snapshots (.db.gz); restore reads both.")
}

// NewCommand returns `start` for the control plane stack makes; it runs
// until ctx is done. name is the product's, as main's root command is
// called. The stack is composed once, here; if that fails, running the
// command returns the error.
func NewCommand(ctx context.Context, name string, stack layering.Stack) *cobra.Command {
	comp, composeErr := stack.Compose()
	o := NewOptions(comp)
	fss := &cliflag.NamedFlagSets{}
	AddFlags(o, name, comp, fss)
	logs := logging.NewOptions()
	logging.AddFlags(logs, fss)
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run etcd, the API server and the controllers in one process",
		Long: "Run a whole " + name + " control plane in one process: an embedded etcd member reachable only through a unix socket " +
			"in the data dir, the API server and the controllers. Certificates and admin.kubeconfig are created on the first start and reused. " +
			comp.Describe(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := version.CheckVersionFlags(cmd.Flags()); err != nil {
				return err
			}
			if err := logging.Apply(logs); err != nil {
				return err
			}
			if composeErr != nil {
				return fmt.Errorf("composing the stack: %w", composeErr)
			}
			defer gcheadroom.Start(gcheadroom.Default())()
			// Under systemd: READY=1 once the control plane is ready,
			// STOPPING=1 when it begins to stop. Taken before the API
			// server starts, which would otherwise say READY=1 as soon
			// as it listens.
			notify := sdnotify.TakeFromEnv()
			cp, err := allinone.Start(ctx, *o, comp)
			if err != nil {
				return err
			}
			defer notify.Start(ctx, cp.Ready())()
			if logs.Format == logsapi.DefaultLogFormat {
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "%s is serving on %s\n", name, cp.URL)
				fmt.Fprintf(out, "admin kubeconfig: %s\n", cp.AdminKubeconfig)
				fmt.Fprintf(out, "export KUBECONFIG=%s\n", cp.AdminKubeconfig)
			} else {
				// One process, one format: log readers parse every line.
				klog.InfoS("Serving", "url", cp.URL, "adminKubeconfig", cp.AdminKubeconfig)
			}
			return cp.Wait()
		},
	}
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *fss, cols)
	return cmd
}
