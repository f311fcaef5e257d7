// Command widgets is a control plane built with gcp: Kubernetes' API
// machinery with namespaces, RBAC and CRDs, without leases or API Priority
// and Fairness, plus a native API group of its own, widgets.example.dev,
// and its controller.
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
	"github.com/gcp-project/gcp/commands/start"
	"github.com/gcp-project/gcp/commands/version"
	"github.com/gcp-project/gcp/pkg/layering"

	"example.dev/widgets/layer"
)

func main() {
	// The first SIGINT or SIGTERM stops everything in order; a second kills.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()

	stack := layering.Generic().
		Without(layering.Coordination, layering.FlowControl).
		With(layer.Layer())

	cobra.EnableTraverseRunHooks = true // logging is set up by the root's hook
	root := &cobra.Command{Use: "widgets", Short: "A control plane for widgets", SilenceUsage: true}
	name := root.Name() // the commands' help and messages say "widgets"
	root.AddCommand(
		start.NewCommand(ctx, name, stack),
		apiserver.NewCommand(ctx, name, stack),
		controllers.NewCommand(ctx, name, stack),
		etcd.NewCommand(ctx, name),
		kubectl.NewCommand(name, start.DefaultDataDir),
		version.NewCommand(name),
	)
	os.Exit(cli.Run(root))
}
