// Package start is `gcp start`: the whole control plane in one process,
// with zero flags needed.
package start

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/term"

	etcdcmd "github.com/gcp-project/gcp/commands/etcd"
	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/sdnotify"
	"github.com/gcp-project/gcp/pkg/gcheadroom"
	"github.com/gcp-project/gcp/pkg/layering"
)

// DefaultDataDir is where `gcp start` keeps its state.
const DefaultDataDir = ".gcp"

// NewOptions returns the defaults of `gcp start`.
func NewOptions() *allinone.Options { return allinone.NewOptions() }

// AddFlags adds the flags of `gcp start` to fss.
func AddFlags(o *allinone.Options, fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("start")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the PKI, the etcd data and admin.kubeconfig; created with mode 0700.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "IP address the API server listens on.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "Port the API server serves HTTPS on (0 picks a free port).")
	fs.StringSliceVar(&o.TLSSANs, "tls-san", o.TLSSANs, "Extra DNS names or IP addresses for the serving certificate.")
	fs.Var(cliflag.NewMapStringString(&o.RuntimeConfig), "runtime-config",
		"A set of key=value pairs that enable or disable built-in APIs, as for gcp apiserver, e.g. coordination.k8s.io/v1beta1=true.")
	fs.StringSliceVar(&o.EnableAdmissionPlugins, "enable-admission-plugins", o.EnableAdmissionPlugins,
		"Admission plugins to enable in addition to the default ones, as for gcp apiserver.")
	fs.StringSliceVar(&o.DisableAdmissionPlugins, "disable-admission-plugins", o.DisableAdmissionPlugins,
		"Admission plugins to disable, as for gcp apiserver (e.g. ResourceQuota).")
	fs.BoolVar(&o.SecretsEncryption, "secrets-encryption", o.SecretsEncryption,
		"Encrypt Secrets in etcd with a key kept in <data-dir>/pki/"+allinone.EncryptionConfigName+" (made on the first start). See docs/security.md for rotating it.")
	compaction := storagebackend.DefaultCompactInterval
	o.CompactionInterval = &compaction
	fs.DurationVar(o.CompactionInterval, "etcd-compaction-interval", compaction,
		"How often the API server compacts etcd's history, as gcp apiserver's flag; 0 never compacts.")
	fs.StringVar(&o.AuditLogPath, "audit-log-path", o.AuditLogPath,
		"Write an audit log to this file ('-' for standard output) with the policy in <data-dir>/"+allinone.AuditPolicyName+
			" (a default is written the first time), rotated after 100 MiB, 10 files kept for 30 days.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve /debug/pprof and /debug/flags/v (to system:masters only).")
	watchGrace := options.DefaultShutdownWatchTerminationGracePeriod
	o.ShutdownWatchTerminationGracePeriod = &watchGrace
	fs.DurationVar(o.ShutdownWatchTerminationGracePeriod, "shutdown-watch-termination-grace-period", watchGrace,
		"How long SIGTERM waits for open watches (kubectl get -w, informers) before closing them; 0 leaves them open until the 60 s request timeout, as kube-apiserver does by default.")
	fs.Int64Var(&o.QuotaBackendBytes, "quota-backend-bytes", o.QuotaBackendBytes,
		"Maximum size of etcd's database in bytes (etcd's default, 2 GiB, when 0). Past it etcd raises the NOSPACE alarm and the "+
			"control plane refuses writes until space is freed: see docs/operations.md.")
	etcdcmd.BytesVar(fs, &o.MinFreeDisk, "min-free-disk", etcdcmd.MinFreeDiskUsage)
	snap := fss.FlagSet("snapshots")
	snap.DurationVar(&o.SnapshotInterval, "snapshot-interval", o.SnapshotInterval,
		"Take a snapshot of etcd this often (e.g. 12h, as k3s does); 0 takes none. `gcp snapshot` lists, saves and restores them.")
	snap.IntVar(&o.SnapshotRetention, "snapshot-retention", 5, "How many scheduled snapshots to keep; older ones are deleted.")
	snap.StringVar(&o.SnapshotDir, "snapshot-dir", "", "Directory for snapshots (mode 0700); empty means <data-dir>/snapshots.")
	snap.BoolVar(&o.SnapshotCompress, "snapshot-compress", false, "Gzip the scheduled snapshots (.db.gz); restore reads both.")
}

// NewCommand returns `start` for the control plane stack makes; it runs
// until ctx is done.
func NewCommand(ctx context.Context, stack layering.Stack) *cobra.Command {
	o := NewOptions()
	fss := &cliflag.NamedFlagSets{}
	AddFlags(o, fss)
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run etcd, the API server and the controllers in one process",
		Long: "Run a whole gcp control plane in one process: an embedded etcd member reachable only through a unix socket " +
			"in the data dir, the API server and the controllers. Certificates and admin.kubeconfig are created on the first start and reused.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			comp, err := stack.Compose()
			if err != nil {
				return err
			}
			defer gcheadroom.Start(gcheadroom.Default)()
			o.Notify = sdnotify.TakeFromEnv()
			cp, err := allinone.Start(ctx, *o, comp)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s is serving on %s\n", cmd.Root().Name(), cp.URL)
			fmt.Fprintf(out, "admin kubeconfig: %s\n", cp.AdminKubeconfig)
			fmt.Fprintf(out, "export KUBECONFIG=%s\n", cp.AdminKubeconfig)
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
