package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gcp-project/gcp/commands/apiserver"
	controllerscmd "github.com/gcp-project/gcp/commands/controllers"
	"github.com/gcp-project/gcp/commands/manifests"
	"github.com/gcp-project/gcp/commands/start"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/layering"
)

// TestBadStackIsTheCommandsError: a stack that does not compose (here a
// layer twice) is the error of every command that serves it, one line, as
// a bad flag is: building the commands neither panics nor fails, and
// --help still works.
func TestBadStackIsTheCommandsError(t *testing.T) {
	generic := layering.Generic()
	bad := append(generic, generic[0])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for args, newCommand := range map[string]func() *cobra.Command{
		"start --data-dir " + t.TempDir(): func() *cobra.Command { return start.NewCommand(ctx, "gcp", bad) },
		"apiserver":                       func() *cobra.Command { return apiserver.NewCommand(ctx, "gcp", bad) },
		"controllers --kubeconfig x":      func() *cobra.Command { return controllerscmd.NewCommand(ctx, "gcp", bad) },
		"manifests systemd --role apiserver -- --etcd-servers https://127.0.0.1:2379": func() *cobra.Command {
			return manifests.NewCommand("gcp", bad)
		},
	} {
		t.Run(strings.Fields(args)[0], func(t *testing.T) {
			execute := func(args ...string) error {
				root := &cobra.Command{Use: "gcp", SilenceUsage: true, SilenceErrors: true}
				root.AddCommand(newCommand())
				var out bytes.Buffer
				root.SetOut(&out)
				root.SetErr(&out)
				root.SetArgs(args)
				err := root.Execute()
				return err
			}
			fields := strings.Fields(args)
			path := fields
			if i := slices.IndexFunc(fields, func(f string) bool { return strings.HasPrefix(f, "-") }); i >= 0 {
				path = slices.Clip(fields[:i])
			}
			if err := execute(append(path, "--help")...); err != nil {
				t.Fatalf("--help: %v", err)
			}
			err := execute(fields...)
			if err == nil || !strings.Contains(err.Error(), "composing the stack") || !strings.Contains(err.Error(), "appears twice") {
				t.Fatalf("got %v, want the composition's error", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
		})
	}
}

// TestHelpFollowsTheStack: the help of the commands that serve a stack
// names what that stack serves and runs, so a consumer's binary without
// coordination (examples/widgets) does not claim leases, and a layer's
// own controller is listed.
func TestHelpFollowsTheStack(t *testing.T) {
	mine := layering.Layer{Name: "mine", Controllers: []controllers.Descriptor{{Name: "widget-controller"}, {Name: "gizmo-controller", DisabledByDefault: true}}}
	stack := layering.Generic().Without(layering.Coordination).With(mine)
	ctx := context.Background()
	for _, cmd := range []*cobra.Command{start.NewCommand(ctx, "widgets", stack), apiserver.NewCommand(ctx, "widgets", stack)} {
		if strings.Contains(cmd.Long, "coordination.k8s.io") || !strings.Contains(cmd.Long, "rbac.authorization.k8s.io") || !strings.Contains(cmd.Long, "apiextensions.k8s.io (CRDs)") {
			t.Errorf("%s's help does not list the stack's groups: %s", cmd.Name(), cmd.Long)
		}
	}
	cmd := controllerscmd.NewCommand(ctx, "widgets", stack)
	if !strings.Contains(cmd.Long, ", widget-controller; off unless --controllers names them: gizmo-controller)") || !strings.Contains(cmd.Long, "(namespace-controller, ") {
		t.Errorf("controllers' help does not list the stack's controllers: %s", cmd.Long)
	}
}
