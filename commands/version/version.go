// Package version is `gcp version`: the Kubernetes version gcp (or a
// control plane built with it) implements.
package version

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gcp-project/gcp/pkg/controlplane/version"
)

// NewCommand returns `version`, printing name before the version.
func NewCommand(name string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the Kubernetes version " + name + " implements",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			switch output {
			case "":
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s, %s)\n", name, info.GitVersion, info.GoVersion, info.Platform)
				return err
			case "json":
				b, err := json.MarshalIndent(info, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return err
			default:
				return fmt.Errorf("--output must be empty or json, got %q", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: empty for one line, or json.")
	return cmd
}
