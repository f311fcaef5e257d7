package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podman runs podman on a store of the test's own (images, containers and
// state under a t.TempDir()), configured by hack/podman/containers.conf.
type podman struct {
	t    *testing.T
	args []string
	env  []string
}

// newPodman fails the test when podman or runc is missing: .ci/run
// installs them, and this test never skips.
func newPodman(t *testing.T) *podman {
	t.Helper()
	for _, bin := range []string{"podman", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed (apt-get install -y podman runc; .ci/run does): %v", bin, err)
		}
	}
	conf, err := filepath.Abs(filepath.Join("..", "..", "hack", "podman", "containers.conf"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "gcp-podman-")
	if err != nil {
		t.Fatal(err)
	}
	p := &podman{t: t,
		args: []string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"), "--tmpdir", filepath.Join(dir, "tmp")},
		env:  withEnv(os.Environ(), []string{"CONTAINERS_CONF=" + conf}),
	}
	t.Cleanup(func() {
		_, _ = p.run("pod", "rm", "--force", "--all")
		if out, err := p.run("system", "reset", "--force"); err != nil {
			t.Logf("podman system reset: %v\n%s", err, out)
		}
		_ = os.RemoveAll(dir)
	})
	return p
}

func (p *podman) run(args ...string) (string, error) {
	cmd := exec.Command("podman", append(slicesClone(p.args), args...)...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (p *podman) must(args ...string) string {
	p.t.Helper()
	out, err := p.run(args...)
	if err != nil {
		p.t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// logs is a container's output, read when a failure prints it.
type logs struct {
	p    *podman
	name string
}

func (l logs) String() string {
	out, _ := l.p.run("logs", "--tail", "60", l.name)
	return out
}

// play writes pod to dir and runs it with `podman play kube`, returning
// the name podman gives its container.
func (p *podman) play(dir string, pod *corev1.Pod, manifest string) string {
	p.t.Helper()
	file := filepath.Join(dir, pod.Name+".yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		p.t.Fatal(err)
	}
	p.must("play", "kube", file)
	return pod.Name + "-" + pod.Spec.Containers[0].Name
}

func (p *podman) pid(container string) int {
	p.t.Helper()
	pid, err := strconv.Atoi(p.must("inspect", "--format", "{{.State.Pid}}", container))
	if err != nil {
		p.t.Fatal(err)
	}
	return pid
}

// TestStaticPodsUnderPodman runs the three roles' static pods, as
// `gcp pki init` and `gcp manifests static-pod` make them, from the image
// `hack/build.sh image` builds, under podman and runc: each becomes ready
// through its probes, kubectl works, a namespace's deletion completes, a
// SIGKILLed API server is restarted by the runtime, and etcd's data
// survives its pod's restart.
func TestStaticPodsUnderPodman(t *testing.T) {
	t.Parallel()
	p := newPodman(t)
	base := t.TempDir()
	archive := filepath.Join(base, "gcp.tar")
	buildImage(t, archive)
	p.must("load", "--quiet", "--input", archive)

	pki := filepath.Join(base, "pki")
	f := func(name string) string { return filepath.Join(pki, name) }
	apiPort, client, metrics, ctrlPort := freePort(t), freePort(t), freePort(t), freePort(t)
	mustGCP(t, "pki", "init", "--dir", pki, "--etcd-member", "a=127.0.0.1", "--server", fmt.Sprintf("https://127.0.0.1:%d", apiPort))

	manifest := func(role string, args ...string) (*corev1.Pod, string) {
		out := mustGCP(t, append([]string{"manifests", "static-pod", "--role", role, "--"}, args...)...)
		return staticPod(t, role, args...), out
	}
	ready := func(pod *corev1.Pod, container string) {
		t.Helper()
		waitProbes(t, pod.Spec.Containers[0], logs{p, container})
	}

	etcdPod, etcdYAML := manifest("etcd", "--name=a", "--data-dir="+filepath.Join(base, "etcd"),
		fmt.Sprintf("--listen-client-urls=https://127.0.0.1:%d", client),
		fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", metrics),
		"--cert-file="+f("etcd/a/server.crt"), "--key-file="+f("etcd/a/server.key"),
		"--trusted-ca-file="+f("etcd/ca.crt"), "--client-cert-auth")
	etcd := p.play(base, etcdPod, etcdYAML)
	ready(etcdPod, etcd)

	apiPod, apiYAML := manifest("apiserver", fmt.Sprintf("--etcd-servers=https://127.0.0.1:%d", client),
		"--etcd-cafile="+f("etcd/ca.crt"), "--etcd-certfile="+f("apiserver-etcd-client.crt"), "--etcd-keyfile="+f("apiserver-etcd-client.key"),
		"--tls-cert-file="+f("apiserver.crt"), "--tls-private-key-file="+f("apiserver.key"), "--client-ca-file="+f("ca.crt"),
		"--service-account-issuer=https://gcp.test", "--service-account-signing-key-file="+f("sa.key"), "--service-account-key-file="+f("sa.pub"),
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(apiPort))
	api := p.play(base, apiPod, apiYAML)
	ready(apiPod, api)

	ctrlPod, ctrlYAML := manifest("controllers", "--kubeconfig="+filepath.Join(base, "controllers.kubeconfig"),
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ctrlPort))
	ctrl := p.play(base, ctrlPod, ctrlYAML)
	ready(ctrlPod, ctrl)

	// The runtime runs them as the manifests say: root without
	// capabilities, on a read-only image.
	for _, c := range []string{etcd, api, ctrl} {
		if got := p.must("inspect", "--format", "{{.HostConfig.ReadonlyRootfs}} {{len .EffectiveCaps}} {{.Config.User}}", c); got != "true 0 0" {
			t.Errorf("%s: read-only root, capabilities, user: %s; want true 0 0", c, got)
		}
	}

	// kubectl works, and the controllers do their part of a namespace's
	// life: its default ServiceAccount, then its deletion.
	a := &allInOne{t: t, binary: gcpBinary, dataDir: base}
	a.kubectl("create", "namespace", "in-pods")
	a.kubectl("create", "configmap", "c", "-n", "in-pods")
	eventually(t, 30*time.Second, func() error {
		_, err := a.kubectlErr("get", "serviceaccount", "default", "-n", "in-pods")
		return err
	})
	a.kubectl("delete", "namespace", "in-pods", "--wait=false")
	eventually(t, 60*time.Second, func() error {
		out, err := a.kubectlErr("get", "namespace", "in-pods", "--ignore-not-found", "-o", "name")
		if err == nil && strings.TrimSpace(out) != "" {
			err = fmt.Errorf("still there: %s", out)
		}
		return err
	})

	// SIGKILL the API server's process: the runtime starts it again.
	before := p.pid(api)
	if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		if now := p.pid(api); now == 0 || now == before {
			return fmt.Errorf("%s: pid %d, killed %d", api, now, before)
		}
		return nil
	})
	ready(apiPod, api)
	if n := p.must("inspect", "--format", "{{.RestartCount}}", api); n == "0" {
		t.Errorf("%s runs again with RestartCount %s", api, n)
	}

	// etcd's data is on the host: it survives the pod's restart.
	a.kubectl("create", "configmap", "survivor")
	p.must("pod", "stop", etcdPod.Name)
	p.must("pod", "start", etcdPod.Name)
	ready(etcdPod, etcd)
	eventually(t, 60*time.Second, func() error {
		_, err := a.kubectlErr("get", "configmap", "survivor")
		return err
	})
}
