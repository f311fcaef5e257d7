// Package e2e runs the built gcp binary as users do and drives it with the
// real kubectl (`gcp kubectl`, k8s.io/kubectl's command).
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// gcpBinary is built once by TestMain.
var gcpBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gcp-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gcpBinary = filepath.Join(dir, "gcp")
	// The binary as it ships: hack/build.sh holds the build flags.
	build := exec.Command("bash", filepath.Join("..", "..", "hack", "build.sh"), gcpBinary)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building gcp:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// allInOne is `gcp start` (or the start command of a binary built like
// gcp) running in its own data dir.
type allInOne struct {
	t       testing.TB
	binary  string
	dataDir string
	cmd     *exec.Cmd
	log     *syncBuffer
	exited  chan error
}

// startAllInOne runs `gcp start` on a free port and waits until kubectl
// sees /readyz.
func startAllInOne(t testing.TB, dataDir string, flags ...string) *allInOne {
	t.Helper()
	return startBinary(t, gcpBinary, dataDir, flags...)
}

// startAllInOneEnv is startAllInOne with env ("NAME=value", e.g.
// HTTPS_PROXY) in the environment of `gcp start`. A variable of env
// replaces the test's own of that name in either case, as proxy
// variables are read in either.
func startAllInOneEnv(t testing.TB, dataDir string, env []string, flags ...string) *allInOne {
	t.Helper()
	return startBinaryEnv(t, gcpBinary, dataDir, env, flags...)
}

// startBinary runs `<binary> start` on a free port and waits until its
// kubectl sees /readyz.
func startBinary(t testing.TB, binary, dataDir string, flags ...string) *allInOne {
	t.Helper()
	return startBinaryEnv(t, binary, dataDir, nil, flags...)
}

func startBinaryEnv(t testing.TB, binary, dataDir string, env []string, flags ...string) *allInOne {
	t.Helper()
	a := &allInOne{t: t, binary: binary, dataDir: dataDir, log: &syncBuffer{}, exited: make(chan error, 1)}
	a.cmd = exec.Command(binary, append([]string{"start", "--data-dir", dataDir, "--secure-port", "0"}, flags...)...)
	if env != nil {
		a.cmd.Env = withEnv(os.Environ(), env)
	}
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.exited <- a.cmd.Wait() }()
	t.Cleanup(func() { a.stop() })
	poll.Until(t, 100*time.Millisecond, 60*time.Second, func() error {
		if _, err := os.Stat(a.kubeconfig()); err == nil {
			if _, err := a.kubectlErr("get", "--raw", "/readyz"); err == nil {
				return nil
			}
		}
		select {
		case err := <-a.exited:
			a.exited <- err
			t.Fatalf("%s start exited before ready: %v\n%s", filepath.Base(binary), err, a.log)
		default:
		}
		return fmt.Errorf("%s start not ready:\n%s", filepath.Base(binary), a.log)
	})
	return a
}

func (a *allInOne) kubeconfig() string { return filepath.Join(a.dataDir, "admin.kubeconfig") }

// stop sends SIGTERM and returns the exit error (nil for exit 0).
func (a *allInOne) stop() error {
	if a.cmd.ProcessState != nil {
		return nil
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-a.exited:
		a.exited <- err
		return err
	case <-time.After(60 * time.Second):
		// SIGQUIT makes the Go runtime write every goroutine's stack to
		// stderr (the log) and exit: what it was waiting for.
		_ = a.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case err := <-a.exited:
			a.exited <- err
		case <-time.After(10 * time.Second):
			_ = a.cmd.Process.Kill()
		}
		a.t.Errorf("%s start did not stop within 60s of SIGTERM; its log, ending with its goroutines at SIGQUIT:\n%s", filepath.Base(a.binary), a.log)
		return fmt.Errorf("killed")
	}
}

// kubectlErr runs `gcp kubectl` against the data dir's kubeconfig.
func (a *allInOne) kubectlErr(args ...string) (string, error) {
	return a.kubectlEnv(nil, "", args...)
}

func (a *allInOne) kubectlEnv(env []string, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.binary, append([]string{"kubectl", "--kubeconfig", a.kubeconfig()}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubectl runs `gcp kubectl` and fails the test on error.
func (a *allInOne) kubectl(args ...string) string {
	a.t.Helper()
	out, err := a.kubectlErr(args...)
	if err != nil {
		a.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// apply pipes manifest into kubectl with args.
func (a *allInOne) apply(manifest string, args ...string) string {
	a.t.Helper()
	out, err := a.kubectlEnv(nil, manifest, args...)
	if err != nil {
		a.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// withEnv is base with env's variables in place of base's of the same
// name, compared without case.
func withEnv(base, env []string) []string {
	replaced := map[string]bool{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		replaced[strings.ToUpper(name)] = true
	}
	var out []string
	for _, kv := range base {
		if name, _, _ := strings.Cut(kv, "="); !replaced[strings.ToUpper(name)] {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}
