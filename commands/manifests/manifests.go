// Package manifests is `gcp manifests`: it prints a systemd unit or a
// Kubernetes static pod that runs one role of a split control plane (an
// etcd member, an API server, the controllers) with the role's own flags,
// as kubeadm writes the static pods of its control plane.
//
// The role's flags are parsed by the role's own flag set, so a manifest
// holds only flags the role accepts, checked as the role checks them;
// they are repeated exactly as given.
package manifests

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/gcp-project/gcp/pkg/layering"
)

// NewCommand returns `manifests` with its subcommands systemd and
// static-pod, for the roles of stack. name is the product's, as main's
// root command is called: the binary the manifests run.
func NewCommand(name string, stack layering.Stack) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manifests",
		Short: "Print a systemd unit or a static pod manifest that runs one part of a split control plane",
		Long: "Print a systemd unit or a Kubernetes static pod manifest that runs one role (" + strings.Join(roleNames, ", ") +
			") with the role's own flags, e.g.\n\n" +
			"  " + name + " manifests systemd --role etcd -- --name a --listen-client-urls https://10.0.0.1:2379 ...\n" +
			"  " + name + " manifests static-pod --role apiserver -- --etcd-servers https://10.0.0.1:2379 ...\n\n" +
			"Paths in the flags must be absolute. See docs/deployment.md.",
		Args: cobra.NoArgs,
	}
	rs := roles(name, stack)
	cmd.AddCommand(
		newKindCommand(name, rs, "systemd", "Print a systemd unit (Type=notify, hardened, a dedicated user) that runs one role",
			func(fs *pflag.FlagSet) func(io.Writer, spec) error {
				o := &systemdOptions{binary: "/usr/local/bin/" + name, user: name, group: name}
				fs.StringVar(&o.binary, "binary", o.binary, "Absolute path of the "+name+" binary on the host.")
				fs.StringVar(&o.user, "user", o.user, "User the role runs as; create it (a system user without a shell) and let it read the certificates.")
				fs.StringVar(&o.group, "group", o.group, "Group the role runs as.")
				return o.write
			}),
		newKindCommand(name, rs, "static-pod", "Print a static pod manifest (kubeadm's conventions) that runs one role",
			func(fs *pflag.FlagSet) func(io.Writer, spec) error {
				o := &staticPodOptions{image: defaultImage(name)}
				fs.StringVar(&o.image, "image", o.image, "Container image with the "+name+" binary on its PATH.")
				fs.StringVar(&o.podName, "pod-name", "", "Name of the pod; "+name+"-ROLE when not given. Give each pod of a role on one machine a name of its own (three etcd members on one host): the kubelet and podman keep one pod per name.")
				o.podNameSet = func() bool { return fs.Changed("pod-name") }
				return o.write
			}),
	)
	return cmd
}

// newKindCommand returns the subcommand that prints one kind of manifest.
// Its flags are --role, the kind's own (added by kindFlags, which returns
// the writer) and, after the role is known, the role's.
func newKindCommand(product string, rs map[string]role, kind, short string, kindFlags func(*pflag.FlagSet) func(io.Writer, spec) error) *cobra.Command {
	return &cobra.Command{
		Use:   kind + " --role " + strings.Join(roleNames, "|") + " [flags] [--] [the role's flags]",
		Short: short,
		// The role's flags depend on --role, so parsing is ours.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			own := pflag.NewFlagSet(kind, pflag.ContinueOnError)
			own.SetOutput(io.Discard)
			roleName := own.String("role", "", "The role to run: "+strings.Join(roleNames, ", ")+".")
			help := own.BoolP("help", "h", false, "Help for "+kind+".")
			write := kindFlags(own)

			// Find --role (and --help) first, ignoring the role's flags.
			probe := pflag.NewFlagSet(kind, pflag.ContinueOnError)
			probe.SetOutput(io.Discard)
			probe.ParseErrorsAllowlist.UnknownFlags = true
			probe.AddFlagSet(own)
			_ = probe.Parse(args)
			r, known := rs[*roleName]
			if *help {
				return usage(cmd.OutOrStdout(), cmd, own, r, known)
			}
			if !known {
				return fmt.Errorf("--role must be one of %s, got %q", strings.Join(roleNames, ", "), *roleName)
			}

			s, err := parse(*roleName, r, own, args)
			s.product = product
			if err != nil {
				return err
			}
			return write(cmd.OutOrStdout(), s)
		},
	}
}

// parse parses args with own flags and the role's, and returns the spec.
func parse(name string, r role, own *pflag.FlagSet, args []string) (spec, error) {
	fss, check := r.flags()
	var settings []setting
	all := pflag.NewFlagSet(name, pflag.ContinueOnError)
	all.SetOutput(io.Discard)
	for _, fs := range fss.FlagSets {
		record(fs, &settings)
		all.AddFlagSet(fs)
	}
	all.AddFlagSet(own)
	// "--" only separates the role's flags for the reader.
	if i := slices.Index(args, "--"); i >= 0 {
		args = slices.Delete(slices.Clone(args), i, i+1)
	}
	if err := all.Parse(args); err != nil {
		return spec{}, err
	}
	if all.NArg() > 0 {
		return spec{}, fmt.Errorf("unexpected argument %q: give the %s role's flags as --name=value", all.Arg(0), name)
	}
	for _, flag := range sortedKeys(r.defaults) {
		if !all.Changed(flag) {
			if err := all.Set(flag, r.defaults[flag]); err != nil {
				return spec{}, err
			}
		}
	}
	paths, err := hostPaths(settings)
	if err != nil {
		return spec{}, err
	}
	p, errs := check()
	if len(errs) > 0 {
		return spec{}, fmt.Errorf("%s: %w", name, utilerrors.NewAggregate(errs))
	}
	s := spec{role: name, r: r, paths: paths, probe: p}
	for _, set := range settings {
		s.args = append(s.args, "--"+set.name+"="+set.value)
	}
	return s, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// usage prints the kind's flags and, once --role is known, the role's.
func usage(w io.Writer, cmd *cobra.Command, own *pflag.FlagSet, r role, known bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage:\n  %s\n\nFlags:\n%s", cmd.Short, cmd.UseLine(), own.FlagUsages())
	if known {
		fss, _ := r.flags()
		for _, name := range fss.Order {
			fmt.Fprintf(&b, "\nThe role's %s flags:\n%s", name, fss.FlagSets[name].FlagUsages())
		}
	} else {
		b.WriteString("\nWith --role, --help also lists the role's flags.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
