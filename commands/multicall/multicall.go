// Package multicall is the root of a multicall binary: gcp's, or a
// control plane built with gcp. Main builds the root command from every
// command in commands/, serving the product's stack and saying its name,
// and runs it, so that a product's main is one line and cannot drift from
// gcp's (signals, logging hooks, kubectl's catalogs).
//
// Like hyperkube, the binary runs the command its file name names: as
// <product>-<command> (gcp-apiserver, gcp-etcd, ...) it is `<product>
// <command>`, and as kubectl it is `<product> kubectl`. `<product>
// --make-symlinks DIR` makes those links to the running executable in DIR.
package multicall

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"

	"github.com/gcp-project/gcp/commands/apiserver"
	"github.com/gcp-project/gcp/commands/controllers"
	"github.com/gcp-project/gcp/commands/etcd"
	"github.com/gcp-project/gcp/commands/kubectl"
	// Before any kubectl package: kubectl's catalogs load only for
	// `<product> kubectl` (docs/architecture.md, decision 18).
	_ "github.com/gcp-project/gcp/commands/kubectl/translations"
	"github.com/gcp-project/gcp/commands/manifests"
	"github.com/gcp-project/gcp/commands/pki"
	"github.com/gcp-project/gcp/commands/snapshot"
	"github.com/gcp-project/gcp/commands/start"
	"github.com/gcp-project/gcp/commands/version"
	"github.com/gcp-project/gcp/pkg/layering"
)

// Product is what a multicall binary serves and how it is called.
type Product struct {
	// Name is the root command's name, which every command says in its
	// help and messages ("gcp", "widgets"), and the prefix of the file
	// names that run one command (gcp-apiserver).
	Name string
	// Short is the root's one line of help.
	Short string
	// Stack is the control plane the commands serve.
	Stack layering.Stack
}

// kubectlCommand is the command a binary called kubectl runs.
const kubectlCommand = "kubectl"

// Main runs the product's binary with the process's arguments and returns
// its exit code, for os.Exit. For the servers, the first SIGINT or SIGTERM
// stops everything in order and a second kills the process; kubectl keeps
// the signals' default, as it has alone, so one Ctrl-C ends `kubectl get
// -w` or `kubectl proxy`.
func Main(p Product) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := NewRoot(ctx, p)
	args := Args(root, os.Args)
	root.SetArgs(args)
	if cmd, _, err := root.Find(args); err != nil || !under(cmd, kubectlCommand) {
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
	// first thing in RunE (pkg/controlplane/logging).
	return run(root)
}

// run runs root as cli.Run does and returns the exit code: 0, or the one
// the failed command's error asks for (exitCode), or 1 for an error that
// asks for none or comes before a command runs (a flag that does not
// parse).
func run(root *cobra.Command) int {
	code := 0
	recordExitCodes(root, &code)
	if cli.Run(root) == 0 {
		return 0
	}
	return max(code, 1)
}

// recordExitCodes makes cmd and every command under it set *code to the
// exit code its error asks for (exitCode), for Main to return instead of
// the 1 cli.Run returns for every error.
func recordExitCodes(cmd *cobra.Command, code *int) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			err := run(c, args)
			*code = exitCode(err)
			return err
		}
	}
	for _, sub := range cmd.Commands() {
		recordExitCodes(sub, code)
	}
}

// NewRoot returns the product's root command with every command of
// commands/ serving p.Stack and saying p.Name; the servers run until ctx
// is done. Its --make-symlinks flag makes the links Args dispatches on.
func NewRoot(ctx context.Context, p Product) *cobra.Command {
	// Subcommands' own persistent pre-run hooks (kubectl has one) must not
	// shadow the root's, which initialises logging.
	cobra.EnableTraverseRunHooks = true
	var linkDir string
	root := &cobra.Command{
		Use:   p.Name,
		Short: p.Short,
		// Errors are one line; --help shows usage.
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if linkDir == "" {
				return cmd.Help()
			}
			return MakeSymlinks(cmd, linkDir)
		},
	}
	root.Flags().StringVar(&linkDir, "make-symlinks", "",
		"Make a symlink per command to this executable in this directory and exit: "+p.Name+"-<command> runs that command, kubectl runs kubectl.")
	name := root.Name()
	root.AddCommand(
		start.NewCommand(ctx, name, p.Stack),
		apiserver.NewCommand(ctx, name, p.Stack),
		controllers.NewCommand(ctx, name, p.Stack),
		etcd.NewCommand(ctx, name),
		kubectl.NewCommand(name, start.DefaultDataDir),
		pki.NewCommand(name),
		manifests.NewCommand(name, p.Stack),
		snapshot.NewCommand(ctx, name, start.DefaultDataDir),
		version.NewCommand(name),
	)
	return root
}

// LinkNames returns the file names, by command name, that run root's
// commands: <root>-<command>, and kubectl for kubectl.
func LinkNames(root *cobra.Command) map[string]string {
	names := map[string]string{}
	for _, cmd := range root.Commands() {
		switch {
		case cmd.Hidden || cmd.Name() == "help" || cmd.Name() == "completion":
		case cmd.Name() == kubectlCommand:
			names[cmd.Name()] = kubectlCommand
		default:
			names[cmd.Name()] = root.Name() + "-" + cmd.Name()
		}
	}
	return names
}

// Args returns the arguments root runs with for the process's osArgs
// (os.Args): the command that the file name osArgs[0] names (see
// LinkNames) before the others, or the others alone.
func Args(root *cobra.Command, osArgs []string) []string {
	if len(osArgs) == 0 {
		return nil
	}
	base := filepath.Base(osArgs[0])
	for command, link := range LinkNames(root) {
		if base == link || base == root.Name()+"-"+command {
			return append([]string{command}, osArgs[1:]...)
		}
	}
	return osArgs[1:]
}

// MakeSymlinks makes in dir, which it creates if need be, a symlink to the
// running executable for each name of LinkNames, replacing a symlink of
// that name but nothing else, and says what it made on cmd's output.
func MakeSymlinks(cmd *cobra.Command, dir string) error {
	root := cmd.Root()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--make-symlinks: finding this executable: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("--make-symlinks: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--make-symlinks: %w", err)
	}
	links := LinkNames(root)
	for _, command := range slices.Sorted(maps.Keys(links)) {
		link := filepath.Join(dir, links[command])
		if fi, err := os.Lstat(link); err == nil {
			if fi.Mode()&fs.ModeSymlink == 0 {
				return fmt.Errorf("--make-symlinks: %s exists and is not a symlink", link)
			}
			if err := os.Remove(link); err != nil {
				return fmt.Errorf("--make-symlinks: %w", err)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--make-symlinks: %w", err)
		}
		if err := os.Symlink(exe, link); err != nil {
			return fmt.Errorf("--make-symlinks: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s (%s %s)\n", link, exe, root.Name(), command)
	}
	return nil
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

// exitCode is the exit code for a command's err: 0 for nil; the code of the
// first error in its chain with an ExitCode method (gcp etcd's for a removed
// member); otherwise 1.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var coder interface{ ExitCode() int }
	if errors.As(err, &coder) {
		return coder.ExitCode()
	}
	return 1
}
