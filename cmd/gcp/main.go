// Command gcp is the generic control plane: Kubernetes' API machinery
// without container orchestration, as one multicall binary.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"

	"github.com/gcp-project/gcp/commands/apiserver"
	"github.com/gcp-project/gcp/commands/controllers"
	"github.com/gcp-project/gcp/commands/etcd"
	"github.com/gcp-project/gcp/commands/kubectl"
	// Before any kubectl package: kubectl's catalogs load only for `gcp kubectl`.
	_ "github.com/gcp-project/gcp/commands/kubectl/translations"
	"github.com/gcp-project/gcp/commands/manifests"
	"github.com/gcp-project/gcp/commands/pki"
	"github.com/gcp-project/gcp/commands/snapshot"
	"github.com/gcp-project/gcp/commands/start"
	"github.com/gcp-project/gcp/commands/version"
	"github.com/gcp-project/gcp/pkg/layering"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	root := newRoot(ctx)
	// For the servers, the first SIGINT or SIGTERM cancels ctx and
	// everything shuts down in order; a second one kills the process.
	// kubectl keeps the signals' default, as it has alone: one Ctrl-C ends
	// `gcp kubectl get -w` or `gcp kubectl proxy`.
	if cmd, _, err := root.Find(os.Args[1:]); err != nil || !under(cmd, "kubectl") {
		sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		go func() {
			<-sigCtx.Done()
			cancel()
			stop()
		}()
	}
	// cli.Run gives every command klog's -v and --vmodule (on the root)
	// and initialises klog in the root's persistent pre-run. The server
	// commands (start, apiserver, controllers, etcd) have kube-apiserver's
	// logging flags of their own, which shadow the root's, and apply them
	// first thing in RunE (pkg/controlplane/logging), so that a binary
	// built from their NewCommand logs as gcp does.
	os.Exit(cli.Run(root))
}

// under says whether cmd is the root's subcommand name or below it.
func under(cmd *cobra.Command, name string) bool {
	for ; cmd != nil && cmd.HasParent(); cmd = cmd.Parent() {
		if cmd.Name() == name && !cmd.Parent().HasParent() {
			return true
		}
	}
	return false
}

func newRoot(ctx context.Context) *cobra.Command {
	// Subcommands' own persistent pre-run hooks (kubectl has one) must not
	// shadow the root's, which initialises logging.
	cobra.EnableTraverseRunHooks = true
	root := &cobra.Command{
		Use:   "gcp",
		Short: "gcp is a generic control plane: the Kubernetes API machinery without pods, nodes or services",
		// Errors are one line; --help shows usage.
		SilenceUsage: true,
	}
	addCommands(ctx, root)
	return root
}

// addCommands adds gcp's commands, serving the generic stack, to root. They
// say the product's name, the root's, in their help and messages, as a
// library user's binary says its own.
func addCommands(ctx context.Context, root *cobra.Command) {
	stack := layering.Generic()
	name := root.Name()
	root.AddCommand(
		start.NewCommand(ctx, name, stack),
		apiserver.NewCommand(ctx, name, stack),
		controllers.NewCommand(ctx, name, stack),
		etcd.NewCommand(ctx, name),
		kubectl.NewCommand(name, start.DefaultDataDir),
		pki.NewCommand(name),
		manifests.NewCommand(name, stack),
		snapshot.NewCommand(ctx, name, start.DefaultDataDir),
		version.NewCommand(name),
	)
}
