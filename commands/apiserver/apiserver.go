// Package apiserver is `gcp apiserver`: the API server alone, against etcd
// members given with --etcd-servers, with TLS flags like kube-apiserver's.
// The command is its flags and a call of apiserver.Run
// (pkg/controlplane/apiserver), which a program runs without cobra.
package apiserver

import (
	"context"
	"fmt"
	"strings"

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
// APIs: the API server's own, with the composition's admission plugins.
func NewOptions(comp composition.Composition) *options.Options {
	o := options.NewOptions()
	// The stack's own admission plugins are flags' values too.
	o.AddAdmissionPlugins(comp.AdmissionPlugins)
	return o
}

// Serves says, for a command's help, what the composition's API server
// serves: its API groups in the order of the stack's layers, then CRDs
// and APIServices if it serves them. It is empty for a composition that
// serves nothing (a stack that did not compose).
func Serves(comp composition.Composition) string {
	var groups []string
	for _, g := range comp.APIGroups {
		if name := g.GroupName(); name != "" {
			groups = append(groups, name)
		} else {
			groups = append(groups, "core (v1)")
		}
	}
	if comp.APIExtensions {
		groups = append(groups, "apiextensions.k8s.io (CRDs)")
	}
	if comp.Aggregator {
		groups = append(groups, "apiregistration.k8s.io (APIServices)")
	}
	if len(groups) == 0 {
		return ""
	}
	return "It serves the API groups " + sentence(groups) + "."
}

// sentence joins items as a sentence does: "a", "a and b", "a, b and c".
func sentence(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

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
		Long:  "Run the " + name + " API server, with its data in the etcd members given with --etcd-servers. " + Serves(comp),
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
			return apiserver.Run(ctx, o, comp, sdnotify.TakeFromEnv())
		},
	}
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *fss, cols)
	return cmd
}
