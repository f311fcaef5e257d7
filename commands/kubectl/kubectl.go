// Package kubectl is `gcp kubectl`: k8s.io/kubectl's own command, which
// talks to the data dir's admin.kubeconfig when neither KUBECONFIG nor
// --kubeconfig says otherwise.
package kubectl

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
)

// AdminKubeconfig is where `gcp start` writes the admin kubeconfig,
// relative to its data dir.
const AdminKubeconfig = "admin.kubeconfig"

// NewCommand returns `kubectl`. defaultDataDir is the data dir whose
// admin.kubeconfig is used when KUBECONFIG is unset. name is the
// product's, as main's root command is called.
func NewCommand(name, defaultDataDir string) *cobra.Command {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	flags := genericclioptions.NewConfigFlags(true).WithDeprecatedPasswordFlag().
		WithDiscoveryBurst(300).WithDiscoveryQPS(50.0).WithWarningPrinter(streams)
	if os.Getenv("KUBECONFIG") == "" {
		path := filepath.Join(defaultDataDir, AdminKubeconfig)
		if _, err := os.Stat(path); err == nil {
			flags.KubeConfig = &path
		}
	}
	cmd := kubectlcmd.NewKubectlCommand(kubectlcmd.KubectlOptions{ConfigFlags: flags, IOStreams: streams})
	for _, sub := range cmd.Commands() {
		if sub.Name() == "version" {
			cmd.RemoveCommand(sub)
		}
	}
	cmd.AddCommand(newVersionCommand(flags, streams.Out))
	cmd.Short = "Run kubectl against " + name + " (defaults to " + filepath.Join(defaultDataDir, AdminKubeconfig) + ")"
	return cmd
}
