package kubectl

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	kubectlversion "k8s.io/kubectl/pkg/cmd/version"
	"sigs.k8s.io/yaml"

	"github.com/gcp-project/gcp/pkg/controlplane/version"
)

// newVersionCommand replaces kubectl's `version`: kubectl reads its client
// version from k8s.io/component-base's ldflags-only variables, which a plain
// `go build` leaves at an unparsable v0.0.0-master. gcp's kubectl is built
// from the same k8s.io release as the server, so both report that release.
func newVersionCommand(flags *genericclioptions.ConfigFlags, out io.Writer) *cobra.Command {
	var clientOnly bool
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the client and server version information",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output must be 'yaml' or 'json'")
			}
			client := version.Get()
			v := kubectlversion.Version{ClientVersion: &client}
			var serverErr error
			if !clientOnly {
				dc, err := flags.ToDiscoveryClient()
				if err == nil {
					v.ServerVersion, serverErr = dc.ServerVersion()
				} else {
					serverErr = err
				}
			}
			switch output {
			case "":
				fmt.Fprintf(out, "Client Version: %s\n", client.GitVersion)
				if v.ServerVersion != nil {
					fmt.Fprintf(out, "Server Version: %s\n", v.ServerVersion.GitVersion)
				}
			case "json", "yaml":
				b, err := json.MarshalIndent(v, "", "  ")
				if err != nil {
					return err
				}
				if output == "yaml" {
					if b, err = yaml.JSONToYAML(b); err != nil {
						return err
					}
				}
				fmt.Fprintln(out, string(b))
			}
			return serverErr
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "If true, shows client version only (no server required).")
	cmd.Flags().StringVarP(&output, "output", "o", "", "One of 'yaml' or 'json'.")
	return cmd
}
