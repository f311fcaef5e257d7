// Package apiserver is `gcp apiserver`: the API server alone, against etcd
// members given with --etcd-servers, with TLS flags like kube-apiserver's.
// The command is its flags, a call of apiserver.Start
// (pkg/controlplane/apiserver), which a program runs without cobra, and
// systemd's notification from the handle's readiness.
package apiserver

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/term"

	"github.com/gcp-project/gcp/internal/gcheadroom"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/logging"
	"github.com/gcp-project/gcp/pkg/controlplane/sdnotify"
	"github.com/gcp-project/gcp/pkg/controlplane/version"
	"github.com/gcp-project/gcp/pkg/layering"
)

// NewOptions returns the defaults of `apiserver` for the composition's
// APIs: apiserver.NewOptions, the library's.
func NewOptions(comp composition.Composition) *options.Options { return apiserver.NewOptions(comp) }

// NewCommand returns `apiserver` serving the APIs of stack; it serves until
// ctx is done. name is the product's, as main's root command is called.
// The stack is composed once, here; if that fails, running the command
// returns the error.
func NewCommand(ctx context.Context, name string, stack layering.Stack) *cobra.Command {
	comp, composeErr := stack.Compose()
	o := NewOptions(comp)
	fss := &cliflag.NamedFlagSets{}
	o.AddFlags(fss)
	logs := logging.NewOptions()
	logging.AddFlags(logs, fss)
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Run the API server against external etcd members",
		Long:  "Run the " + name + " API server, with its data in the etcd members given with --etcd-servers. " + comp.Describe(),
		Args:  cobra.NoArgs,
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
			// Under systemd: READY=1 once /readyz is 200, STOPPING=1
			// when the server begins to stop. Taken before the server
			// starts, which would otherwise say READY=1 as soon as it
			// listens.
			notify := sdnotify.TakeFromEnv()
			server, err := apiserver.Start(ctx, o, comp)
			if err != nil {
				return err
			}
			select {
			case <-server.Done():
				// Stopped while starting: nothing to tell.
				return server.Err()
			default:
			}
			defer notify.Start(ctx, server.Ready())()
			<-server.Done()
			return server.Err()
		},
	}
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *fss, cols)
	return cmd
}
