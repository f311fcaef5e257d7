package manifests

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/gcp-project/gcp/pkg/controlplane/version"
	"github.com/gcp-project/gcp/pkg/layering"
)

const pki = "/etc/gcp/pki"

// roleArgs are flags a deployment made with `gcp pki init --dir
// /etc/gcp/pki` gives each role.
var roleArgs = map[string][]string{
	"etcd": {"--name=a", "--listen-client-urls=https://10.0.0.1:2379",
		"--cert-file=" + pki + "/etcd/a/server.crt", "--key-file=" + pki + "/etcd/a/server.key",
		"--trusted-ca-file", pki + "/etcd/ca.crt", "--client-cert-auth",
		"--listen-peer-urls=https://10.0.0.1:2380", "--initial-cluster=a=https://10.0.0.1:2380",
		"--peer-cert-file=" + pki + "/etcd/a/peer.crt", "--peer-key-file=" + pki + "/etcd/a/peer.key",
		"--peer-trusted-ca-file=" + pki + "/etcd/ca.crt", "--peer-client-cert-auth",
		"--listen-metrics-urls=http://127.0.0.1:2381"},
	"apiserver": {"--etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379",
		"--etcd-cafile=" + pki + "/etcd/ca.crt", "--etcd-certfile=" + pki + "/apiserver-etcd-client.crt",
		"--etcd-keyfile=" + pki + "/apiserver-etcd-client.key",
		"--tls-cert-file=" + pki + "/apiserver.crt", "--tls-private-key-file=" + pki + "/apiserver.key",
		"--client-ca-file=" + pki + "/ca.crt", "--service-account-issuer=https://gcp.example",
		"--service-account-key-file=" + pki + "/sa.pub", "--service-account-signing-key-file=" + pki + "/sa.key",
		"--audit-log-path=/var/log/gcp/audit.log", "--secure-port=6443"},
	"controllers": {"--kubeconfig=/etc/gcp/controllers.kubeconfig",
		"--cluster-signing-cert-file=" + pki + "/ca.crt", "--cluster-signing-key-file=" + pki + "/ca.key"},
}

// run runs `gcp manifests args...` in process.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand("gcp", layering.Generic())
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func decodePod(t *testing.T, manifest string) *corev1.Pod {
	t.Helper()
	s := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
	obj, gvk, err := s.Decode([]byte(manifest), nil, nil)
	if err != nil {
		t.Fatalf("strict decode as a core/v1 Pod: %v\n%s", err, manifest)
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || gvk.Group != "" || gvk.Version != "v1" {
		t.Fatalf("decoded %s as %T, want a core/v1 Pod", gvk, obj)
	}
	return pod
}

func TestStaticPods(t *testing.T) {
	wantProbe := map[string]struct {
		scheme      corev1.URIScheme
		port        int
		live, ready string
	}{
		"etcd":        {corev1.URISchemeHTTP, 2381, "/livez", "/readyz?exclude=non_learner"},
		"apiserver":   {corev1.URISchemeHTTPS, 6443, "/livez", "/readyz"},
		"controllers": {corev1.URISchemeHTTPS, 10257, "/healthz", "/healthz"},
	}
	wantMounts := map[string]map[string]bool{ // path → writable
		"etcd":        {pki + "/etcd": false, "/var/lib/gcp/etcd": true},
		"apiserver":   {pki: false, "/var/log/gcp": true, "/etc/ssl/certs": false},
		"controllers": {"/etc/gcp": false},
	}
	if _, err := os.Stat("/etc/pki"); err == nil {
		wantMounts["apiserver"]["/etc/pki"] = false
	}
	for _, role := range roleNames {
		t.Run(role, func(t *testing.T) {
			out, err := run(t, append([]string{"static-pod", "--role", role, "--image=registry.example/gcp:v1", "--"}, roleArgs[role]...)...)
			if err != nil {
				t.Fatal(err)
			}
			pod := decodePod(t, out)
			if pod.Namespace != "kube-system" || pod.Name != "gcp-"+role ||
				pod.Labels["tier"] != "control-plane" || pod.Labels["component"] != role {
				t.Errorf("metadata: %+v", pod.ObjectMeta)
			}
			if !pod.Spec.HostNetwork || pod.Spec.PriorityClassName != "system-node-critical" || len(pod.Spec.Containers) != 1 {
				t.Errorf("spec: hostNetwork %v, priorityClassName %q, %d containers", pod.Spec.HostNetwork, pod.Spec.PriorityClassName, len(pod.Spec.Containers))
			}
			c := pod.Spec.Containers[0]
			if c.Image != "registry.example/gcp:v1" {
				t.Errorf("image %q", c.Image)
			}
			if len(c.Command) < 2 || c.Command[0] != "gcp" || c.Command[1] != role {
				t.Errorf("command %q", c.Command)
			}
			if sc := c.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
				t.Errorf("securityContext %+v, want root with no capabilities, no privilege escalation and a read-only root", sc)
			}
			// Every flag as given, --name=value.
			for _, arg := range []string{roleArgs[role][0], roleArgs[role][len(roleArgs[role])-1]} {
				if !slices.Contains(c.Command, arg) {
					t.Errorf("command %q lacks %s", c.Command, arg)
				}
			}
			want := wantProbe[role]
			for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				if p == nil || p.HTTPGet == nil {
					t.Errorf("%s probe missing", name)
					continue
				}
				path := want.live
				if name == "readiness" {
					path = want.ready
				}
				g := p.HTTPGet
				if g.Scheme != want.scheme || g.Port.IntValue() != want.port || g.Path != path || g.Host != "127.0.0.1" {
					t.Errorf("%s probe %+v, want %s 127.0.0.1:%d%s", name, g, want.scheme, want.port, path)
				}
			}
			for _, v := range pod.Spec.Volumes {
				if v.HostPath != nil && v.HostPath.Path == "/etc/ssl/certs" && (v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate) {
					t.Errorf("the host's CA certificates are not DirectoryOrCreate: a host without them could not start the pod: %+v", v.HostPath)
				}
			}
			mounts := map[string]bool{}
			for _, m := range c.VolumeMounts {
				mounts[m.MountPath] = !m.ReadOnly
			}
			for _, v := range pod.Spec.Volumes {
				if v.HostPath == nil || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
					return m.Name == v.Name && m.MountPath == v.HostPath.Path
				}) {
					t.Errorf("volume %+v is not a host path mounted at the same path", v)
				}
			}
			if !mapsEqual(mounts, wantMounts[role]) {
				t.Errorf("mounts (path → writable) %v, want %v", mounts, wantMounts[role])
			}
		})
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func mustHave(t *testing.T, out, s string) {
	t.Helper()
	if !strings.Contains(out, s) {
		t.Errorf("lacks %q:\n%s", s, out)
	}
}

// pod returns the flags the role's static pod runs with.
func pod(t *testing.T, role string) []string {
	out, err := run(t, append([]string{"static-pod", "--role", role}, roleArgs[role]...)...)
	if err != nil {
		t.Fatal(err)
	}
	return decodePod(t, out).Spec.Containers[0].Command[2:]
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"systemd"}, `--role must be one of etcd, apiserver, controllers, got ""`},
		{[]string{"static-pod", "--role", "pods"}, `--role must be one of etcd, apiserver, controllers, got "pods"`},
		{[]string{"systemd", "--role", "etcd", "--", "--bogus=1"}, "unknown flag: --bogus"},
		{[]string{"systemd", "--role", "etcd", "--", "--listen-client-urls=http://0.0.0.0:2379"}, "plain http://"},
		{[]string{"systemd", "--role", "etcd", "--data-dir=var/etcd"}, "--data-dir=var/etcd: a manifest needs absolute paths"},
		{[]string{"static-pod", "--role", "etcd", "--listen-client-urls=unix:///run/gcp/etcd.sock"}, "a static pod needs --listen-metrics-urls"},
		{[]string{"static-pod", "--role", "apiserver", "--etcd-servers=https://10.0.0.1:2379"}, "--tls-cert-file and --tls-private-key-file are required"},
		{[]string{"static-pod", "--role", "controllers"}, "--kubeconfig is required"},
		{[]string{"static-pod", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "--secure-port=0"}, "needs --secure-port other than 0"},
		{[]string{"systemd", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "stray"}, `unexpected argument "stray"`},
		{[]string{"systemd", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "--binary=gcp"}, "--binary=gcp: a unit needs the absolute path"},
		{[]string{"systemd", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "--user=root"}, "dedicated unprivileged user"},
		{[]string{"static-pod", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "--image="}, "--image must not be empty"},
		{[]string{"static-pod", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "--image=Registry.example/GCP:v1"}, `--image "Registry.example/GCP:v1" is not an image reference`},
		{[]string{"static-pod", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "--image=gcp:v1.37.2:latest"}, `--image "gcp:v1.37.2:latest" is not an image reference`},
		{[]string{"static-pod", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "--image=gcp@sha256:abc"}, `--image "gcp@sha256:abc" is not an image reference`},
		{[]string{"static-pod", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "--image=gcp v1"}, `--image "gcp v1" is not an image reference`},
		{[]string{"static-pod", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "--pod-name="}, "--pod-name must not be empty"},
		{[]string{"static-pod", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "--pod-name=gcp_etcd_b"}, `--pod-name "gcp_etcd_b" is not a pod name: a lowercase RFC 1123 subdomain`},
		{[]string{"static-pod", "--role", "controllers", "--kubeconfig=/etc/gcp/c.kubeconfig", "--pod-name=Etcd-B"}, `--pod-name "Etcd-B" is not a pod name`},
	} {
		out, err := run(t, tc.args...)
		if err == nil {
			t.Errorf("%q: no error, printed\n%s", tc.args, out)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %q, want one line with %q", tc.args, err, tc.want)
		}
	}
}

func TestHelpListsTheRolesFlags(t *testing.T) {
	out, err := run(t, "systemd", "--role", "etcd", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"--binary", "--role", "--initial-cluster-state", "--peer-cert-file"} {
		mustHave(t, out, s)
	}
	out, err = run(t, "static-pod", "--help")
	if err != nil {
		t.Fatal(err)
	}
	mustHave(t, out, "--image")
	mustHave(t, out, "With --role, --help also lists the role's flags.")
}

// TestDefaultImage: without --image a static pod runs gcp:<gcp version>,
// the name and tag `hack/build.sh image` gives the image it builds.
func TestDefaultImage(t *testing.T) {
	out, err := run(t, append([]string{"static-pod", "--role", "controllers", "--"}, roleArgs["controllers"]...)...)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := decodePod(t, out).Spec.Containers[0].Image, "gcp:"+version.Get().GitVersion; got != want {
		t.Errorf("image %q, want %q", got, want)
	}
	if err := validImage(defaultImage("gcp")); err != nil {
		t.Error(err)
	}
}

// TestPodName: --pod-name names the pod, so that one machine can run
// several pods of a role (three etcd members on one host: the kubelet
// and podman keep one pod per name); without it the pod is gcp-<role>.
func TestPodName(t *testing.T) {
	for _, name := range []string{"gcp-etcd-b", "etcd.b"} {
		for _, args := range [][]string{
			append([]string{"static-pod", "--role", "etcd", "--pod-name", name, "--"}, roleArgs["etcd"]...),
			append([]string{"static-pod", "--role", "etcd", "--"}, append(slices.Clone(roleArgs["etcd"]), "--pod-name="+name)...),
		} {
			out, err := run(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			pod := decodePod(t, out)
			if pod.Name != name || pod.Labels["component"] != "etcd" || pod.Spec.Containers[0].Name != "etcd" {
				t.Errorf("%q: pod %q, component %q, container %q; want pod %q of component and container etcd",
					args, pod.Name, pod.Labels["component"], pod.Spec.Containers[0].Name, name)
			}
			if slices.ContainsFunc(pod.Spec.Containers[0].Command, func(arg string) bool { return strings.Contains(arg, "pod-name") }) {
				t.Errorf("%q: --pod-name passed on to etcd: %q", args, pod.Spec.Containers[0].Command)
			}
		}
	}
	if _, err := run(t, "systemd", "--role", "etcd", "--pod-name=gcp-etcd-b"); err == nil || !strings.Contains(err.Error(), "unknown flag: --pod-name") {
		t.Errorf("systemd --pod-name: %v, want unknown flag", err)
	}
}

// TestHostRootsNotMountedTwice: a log written in /etc mounts
// /etc, which already holds the host's CA certificates.
func TestHostRootsNotMountedTwice(t *testing.T) {
	out, err := run(t, append([]string{"static-pod", "--role", "apiserver", "--"},
		append(slices.Clone(roleArgs["apiserver"]), "--audit-log-path=/etc/audit.log")...)...)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, v := range decodePod(t, out).Spec.Volumes {
		dirs = append(dirs, v.HostPath.Path)
	}
	if !slices.Contains(dirs, "/etc") || slices.Contains(dirs, "/etc/ssl/certs") || slices.Contains(dirs, "/etc/pki") {
		t.Errorf("host paths %q, want /etc and none under it", dirs)
	}
}
