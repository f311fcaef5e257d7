package multicall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gcp-project/gcp/pkg/layering"
)

// runMainEnv makes this test binary run Main instead of its tests, so that
// a symlink to it behaves as one to gcp.
const runMainEnv = "GCP_MULTICALL_TEST_RUN_MAIN"

func testProduct() Product {
	return Product{Name: "gcp", Short: "a generic control plane", Stack: layering.Generic()}
}

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(Main(testProduct()))
	}
	os.Exit(m.Run())
}

// asBinary runs this test binary as gcp, under the file name exe, with
// args.
func asBinary(t *testing.T, exe string, args ...string) string {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(exe), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestArgs(t *testing.T) {
	root := NewRoot(context.Background(), testProduct())
	for _, c := range []struct {
		osArgs, want []string
	}{
		{[]string{"/usr/local/bin/gcp", "apiserver", "--help"}, []string{"apiserver", "--help"}},
		{[]string{"gcp"}, []string{}},
		{[]string{"/usr/local/bin/gcp-apiserver", "--secure-port=1"}, []string{"apiserver", "--secure-port=1"}},
		{[]string{"gcp-etcd", "member", "list"}, []string{"etcd", "member", "list"}},
		{[]string{"./gcp-start"}, []string{"start"}},
		{[]string{"/bin/kubectl", "get", "ns"}, []string{"kubectl", "get", "ns"}},
		{[]string{"gcp-kubectl", "get", "ns"}, []string{"kubectl", "get", "ns"}},
		// Not a command's name: the arguments as they are.
		{[]string{"gcp-unknown", "version"}, []string{"version"}},
		{[]string{"widgets-apiserver", "version"}, []string{"version"}},
	} {
		if got := Args(root, c.osArgs); !slices.Equal(got, c.want) {
			t.Errorf("Args(%q) = %q, want %q", c.osArgs, got, c.want)
		}
	}
}

// TestSymlinks makes the links with --make-symlinks, as the image does,
// and runs the binary under each name: each runs its command. A second
// run replaces the links; a file that is not a link is left alone.
func TestSymlinks(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bin")
	asBinary(t, exe, "--make-symlinks", dir)
	asBinary(t, exe, "--make-symlinks", dir)

	links := LinkNames(NewRoot(context.Background(), testProduct()))
	for _, want := range []string{"gcp-apiserver", "gcp-controllers", "gcp-etcd", "gcp-start", "kubectl"} {
		if !slices.Contains(slices.Collect(maps.Values(links)), want) {
			t.Errorf("no link %s among %v", want, links)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(links) {
		t.Errorf("%s has %d entries, want the %d links %v", dir, len(entries), len(links), links)
	}
	for command, name := range links {
		t.Run(name, func(t *testing.T) {
			link := filepath.Join(dir, name)
			if target, err := os.Readlink(link); err != nil || target != exe {
				t.Fatalf("%s -> %q (%v), want %s", link, target, err, exe)
			}
			if command == "kubectl" {
				if out := asBinary(t, link, "version", "--client"); !strings.HasPrefix(out, "Client Version: v") {
					t.Errorf("kubectl version --client printed %q", out)
				}
				return
			}
			out := asBinary(t, link, "--help")
			if !strings.Contains(out, "Usage:\n  gcp "+command+" ") {
				t.Errorf("%s --help is not gcp %s's:\n%s", name, command, out)
			}
		})
	}

	file := filepath.Join(t.TempDir(), "gcp-apiserver")
	if err := os.WriteFile(file, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "--make-symlinks", filepath.Dir(file))
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	if out, err := cmd.CombinedOutput(); err == nil || !bytes.Contains(out, []byte("is not a symlink")) {
		t.Errorf("--make-symlinks over a file: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(file); string(b) != "mine" {
		t.Errorf("--make-symlinks replaced a file that was not a link: %q", b)
	}
}

// A command's error chooses the process's exit code (gcp etcd's 78 for a
// removed member); any other error, or a flag that does not parse, is 1.
func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"removed"}, 78},
		{[]string{"fails"}, 1},
		{[]string{"works"}, 0},
		{[]string{"works", "--no-such-flag"}, 1},
	} {
		root := &cobra.Command{Use: "gcp"}
		sub := &cobra.Command{Use: "sub"}
		sub.AddCommand(&cobra.Command{Use: "removed", RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("etcd: %w", codedError{78})
		}})
		root.AddCommand(sub,
			&cobra.Command{Use: "fails", RunE: func(*cobra.Command, []string) error { return errors.New("no") }},
			&cobra.Command{Use: "works", RunE: func(*cobra.Command, []string) error { return nil }})
		args := c.args
		if args[0] == "removed" {
			args = append([]string{"sub"}, args...)
		}
		root.SetArgs(args)
		root.SetErr(io.Discard)
		if got := run(root); got != c.want {
			t.Errorf("gcp %s: exit %d, want %d", strings.Join(args, " "), got, c.want)
		}
	}
}

// codedError asks for an exit code, as gcp etcd's error for a removed
// member does.
type codedError struct{ code int }

func (e codedError) Error() string { return "removed" }
func (e codedError) ExitCode() int { return e.code }
