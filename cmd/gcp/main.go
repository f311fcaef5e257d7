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
	"github.com/gcp-project/gcp/commands/manifests"
	"github.com/gcp-project/gcp/commands/pki"
	"github.com/gcp-project/gcp/commands/snapshot"
	"github.com/gcp-project/gcp/commands/start"
	"github.com/gcp-project/gcp/commands/version"
	"github.com/gcp-project/gcp/pkg/layering"
)

func main() {
	// The first SIGINT or SIGTERM cancels ctx and everything shuts down in
	// order; a second one kills the process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	os.Exit(cli.Run(newRoot(ctx)))
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
	stack := layering.Generic()
	root.AddCommand(
		start.NewCommand(ctx, stack),
		apiserver.NewCommand(ctx, stack),
		controllers.NewCommand(ctx, stack),
		etcd.NewCommand(ctx),
		kubectl.NewCommand(start.DefaultDataDir),
		pki.NewCommand(),
		manifests.NewCommand(stack),
		snapshot.NewCommand(ctx, start.DefaultDataDir),
		version.NewCommand(root.Name()),
	)
	return root
}
