// Package etcd is `gcp etcd`: one etcd member, for deployments that run
// etcd apart from `gcp apiserver` (which then takes --etcd-servers).
//
// It is secure by default: TCP client and peer URLs must be https:// with a
// trusted CA, so every client and peer needs a certificate from that CA;
// without TLS, clients can only use a unix:// socket, which file
// permissions guard.
package etcd

import (
	"cmp"
	"context"
	"errors"

	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/term"
	"k8s.io/klog/v2"

	gcpetcd "github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/pkg/controlplane/logging"
	"github.com/gcp-project/gcp/pkg/controlplane/sdnotify"
)

// NewCommand returns `etcd`; it serves until ctx is done. name is the
// product's, as main's root command is called.
func NewCommand(ctx context.Context, name string) *cobra.Command {
	return newCommand(ctx, name, gcpetcd.NewOptions())
}

// newCommand is NewCommand setting o from its flags.
func newCommand(ctx context.Context, name string, o *gcpetcd.Options) *cobra.Command {
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
			return run(ctx, o.Config, sdnotify.TakeFromEnv())
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

// run starts a member with cfg, logs its client URLs, tells notify (under
// systemd) READY=1 once it serves and STOPPING=1 when it begins to stop,
// and serves until ctx is done (then returns nil) or the member fails
// (then returns why).
func run(ctx context.Context, cfg gcpetcd.Config, notify sdnotify.Notifier) error {
	h, err := gcpetcd.Start(ctx, cfg)
	if err != nil {
		return removedExit(err)
	}
	klog.FromContext(ctx).Info("etcd is serving", "name", cmp.Or(cfg.Name, gcpetcd.DefaultName), "dataDir", cfg.DataDir, "clientURLs", h.ClientURLs())
	defer notify.Start(ctx, h.Ready())()
	select {
	case <-ctx.Done():
		return h.Close()
	case err := <-h.Err():
		_ = h.Close()
		return removedExit(err)
	}
}

// removedExit ends the process with gcpetcd.RemovedExitCode when err says
// the member was removed from its cluster, and with 1 otherwise.
func removedExit(err error) error {
	if errors.Is(err, gcpetcd.ErrRemoved) {
		return exitError{code: gcpetcd.RemovedExitCode, error: err}
	}
	return err
}

// exitError is an error that asks the root command (multicall.Main) to
// end the process with code.
type exitError struct {
	error
	code int
}

// ExitCode is the exit code err asks for.
func (e exitError) ExitCode() int { return e.code }

// Unwrap returns the error.
func (e exitError) Unwrap() error { return e.error }
