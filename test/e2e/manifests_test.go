package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/gcp-project/gcp/test/poll"
)

// staticPodArgs are gcp's arguments that print role's static pod with
// args: the role's flags, after the static pod's own and a "--" when args
// have one.
func staticPodArgs(role string, args ...string) []string {
	cmd := []string{"manifests", "static-pod", "--role", role}
	if !slices.Contains(args, "--") {
		cmd = append(cmd, "--")
	}
	return append(cmd, args...)
}

// staticPod runs `gcp manifests static-pod --role role -- args...` and
// decodes the manifest strictly as a core/v1 Pod.
func staticPod(t *testing.T, role string, args ...string) *corev1.Pod {
	t.Helper()
	out := mustGCP(t, staticPodArgs(role, args...)...)
	s := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{Yaml: true, Strict: true})
	obj, _, err := s.Decode([]byte(out), nil, nil)
	pod, ok := obj.(*corev1.Pod)
	if err != nil || !ok {
		t.Fatalf("%s static pod: %v\n%s", role, err, out)
	}
	// The kubelet's container sees the host only through the mounts:
	// every file and directory the command names must be under one.
	c := pod.Spec.Containers[0]
	for _, arg := range c.Command {
		_, value, _ := strings.Cut(arg, "=")
		if !filepath.IsAbs(value) {
			continue
		}
		if _, err := os.Stat(value); err != nil {
			continue
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || value == m.MountPath || strings.HasPrefix(value, m.MountPath+"/")
		}
		if !mounted {
			t.Errorf("%s static pod: %s is not under a mount %+v", role, arg, c.VolumeMounts)
		}
	}
	return pod
}

// podProcess runs the static pod's command with this gcp, as the
// container would, and waits until its probes pass as the kubelet's do.
func podProcess(t *testing.T, pod *corev1.Pod) *process {
	t.Helper()
	c := pod.Spec.Containers[0]
	proc := startProcess(t, c.Command[1:]...)
	waitProbes(t, c, proc.log)
	return proc
}

// waitProbes waits until the container's startup, liveness and
// readiness probes pass as the kubelet runs them: HTTP GET, TLS not
// verified, 2xx or 3xx.
func waitProbes(t *testing.T, c corev1.Container, log fmt.Stringer) {
	t.Helper()
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Fatalf("%s: no %s probe", c.Name, name)
		}
		g := p.HTTPGet
		url := fmt.Sprintf("%s://%s%s", strings.ToLower(string(g.Scheme)), net.JoinHostPort(g.Host, g.Port.String()), g.Path)
		client := http.Client{Timeout: time.Duration(p.TimeoutSeconds) * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
			resp, err := client.Get(url)
			if err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode >= 200 && resp.StatusCode < 400 {
					return nil
				}
				err = fmt.Errorf("%s", resp.Status)
			}
			return fmt.Errorf("%s %s probe %s: %w\n%s", c.Name, name, url, err, log)
		})
	}
}

// unitCommand runs `gcp manifests systemd --role role -- args...` and
// returns its ExecStart's words (the test's paths need no quoting).
func unitCommand(t *testing.T, role string, args ...string) []string {
	t.Helper()
	out := mustGCP(t, append([]string{"manifests", "systemd", "--role", role, "--binary", gcpBinary, "--"}, args...)...)
	_, rest, _ := strings.Cut(out, "\nExecStart=")
	var words []string
	for _, line := range strings.Split(rest, "\n") {
		line, more := strings.CutSuffix(line, " \\")
		words = append(words, strings.Fields(line)...)
		if !more {
			break
		}
	}
	if len(words) < 2 || words[0] != gcpBinary || words[1] != role {
		t.Fatalf("ExecStart %q does not run %s %s:\n%s", words, gcpBinary, role, out)
	}
	return words[1:]
}

// TestManifestsRun runs each role from what `gcp manifests` prints for
// it, as systemd and the kubelet would: the etcd member and the
// controllers from their static pods' commands, the API server from its
// unit's ExecStart under $NOTIFY_SOCKET (READY=1), and each one's probes
// pass. The controllers then do their work through the API server.
func TestManifestsRun(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	pki := filepath.Join(base, "pki")
	p := func(name string) string { return filepath.Join(pki, name) }
	apiPort, client, metrics, ctrlPort := freePort(t), freePort(t), freePort(t), freePort(t)
	server := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	mustGCP(t, "pki", "init", "--dir", pki, "--etcd-member", "a=127.0.0.1", "--server", server)

	etcd := staticPod(t, "etcd", "--name=a", "--data-dir="+filepath.Join(base, "etcd"),
		fmt.Sprintf("--listen-client-urls=https://127.0.0.1:%d", client),
		fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", metrics),
		"--cert-file="+p("etcd/a/server.crt"), "--key-file="+p("etcd/a/server.key"),
		"--trusted-ca-file="+p("etcd/ca.crt"), "--client-cert-auth")
	podProcess(t, etcd)

	apiArgs := []string{fmt.Sprintf("--etcd-servers=https://127.0.0.1:%d", client),
		"--etcd-cafile=" + p("etcd/ca.crt"), "--etcd-certfile=" + p("apiserver-etcd-client.crt"), "--etcd-keyfile=" + p("apiserver-etcd-client.key"),
		"--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"), "--client-ca-file=" + p("ca.crt"),
		"--service-account-issuer=https://gcp.test", "--service-account-signing-key-file=" + p("sa.key"), "--service-account-key-file=" + p("sa.pub"),
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(apiPort)}
	api := runNotified(t, unitCommand(t, "apiserver", apiArgs...)...)
	api.expect("READY=1", 60*time.Second)
	waitProbes(t, staticPod(t, "apiserver", apiArgs...).Spec.Containers[0], &strings.Builder{})

	podProcess(t, staticPod(t, "controllers", "--kubeconfig="+filepath.Join(base, "controllers.kubeconfig"),
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ctrlPort)))
	a := &allInOne{t: t, binary: gcpBinary, dataDir: base}
	a.kubectl("create", "namespace", "from-manifests")
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		_, err := a.kubectlErr("get", "serviceaccount", "default", "-n", "from-manifests")
		return err
	})
}
