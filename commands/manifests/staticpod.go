package manifests

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/distribution/reference"

	"github.com/gcp-project/gcp/pkg/controlplane/version"
)

// staticPodOptions are the flags of `gcp manifests static-pod`.
type staticPodOptions struct {
	image string
	// podName is the pod's name, <product>-<role> unless podNameSet.
	podName    string
	podNameSet func() bool
}

// defaultImage is the image a static pod runs unless --image says
// otherwise: the product's, at the version of this binary.
func defaultImage(product string) string { return product + ":" + version.Get().GitVersion }

// write prints a static pod as kubeadm writes its control plane's: in
// kube-system, labelled tier=control-plane and component=<role>, on the
// host's network, system-node-critical, with the host's directories the
// flags name mounted at the same paths and the kubelet's probes on the
// role's health endpoints.
func (o *staticPodOptions) write(w io.Writer, s spec) error {
	if err := validImage(o.image); err != nil {
		return err
	}
	name := s.product + "-" + s.role
	if o.podNameSet != nil && o.podNameSet() {
		if o.podName == "" {
			return fmt.Errorf("--pod-name must not be empty")
		}
		if errs := validation.IsDNS1123Subdomain(o.podName); len(errs) > 0 {
			return fmt.Errorf("--pod-name %q is not a pod name: %s", o.podName, strings.Join(errs, "; "))
		}
		name = o.podName
	}
	if s.probe == nil {
		return errNoProbe(s.role)
	}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.r.cpu)}
	if s.r.memory != "" {
		requests[corev1.ResourceMemory] = resource.MustParse(s.r.memory)
	}
	get := func(path string) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Host: s.probe.host, Port: intstr.FromInt32(int32(s.probe.port)), Path: path, Scheme: corev1.URIScheme(s.probe.scheme),
		}}
	}
	container := corev1.Container{
		Name:            s.role,
		Image:           o.image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         append([]string{s.product, s.role}, s.args...),
		Resources:       corev1.ResourceRequirements{Requests: requests},
		// kubeadm's timings: generous startup, a slow liveness verdict, a
		// quick readiness one.
		StartupProbe: &corev1.Probe{ProbeHandler: get(s.probe.live),
			InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 15, FailureThreshold: 24},
		LivenessProbe: &corev1.Probe{ProbeHandler: get(s.probe.live),
			InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 15, FailureThreshold: 8},
		ReadinessProbe: &corev1.Probe{ProbeHandler: get(s.probe.ready),
			PeriodSeconds: 1, TimeoutSeconds: 15, FailureThreshold: 3},
		// Root, as kubeadm's control plane runs, since `pki init` (run as
		// root) leaves the keys root's and 0600; but root without a single
		// capability, so it reads and writes only what root owns, binds no
		// port below 1024 and changes nothing in the image. docs/deploy.md
		// says why not a runAsUser.
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                ptr.To[int64](0),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	pod := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{"component": s.role, "tier": "control-plane"},
		},
		Spec: corev1.PodSpec{
			HostNetwork:       true,
			PriorityClassName: "system-node-critical",
			SecurityContext: &corev1.PodSecurityContext{
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
		},
	}
	paths := s.paths
	if s.r.hostRoots {
		paths = withHostRoots(paths)
	}
	used := map[string]bool{}
	for _, p := range paths {
		name := volumeName(p.dir, used)
		typ := corev1.HostPathDirectory
		if p.writable || p.optional {
			typ = corev1.HostPathDirectoryOrCreate
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name,
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p.dir, Type: &typ}}})
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: p.dir, ReadOnly: !p.writable})
	}
	pod.Spec.Containers = []corev1.Container{container}
	out, err := yaml.Marshal(pod)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "# %s %s: written by `%s manifests static-pod --role %s`; put it in the kubelet's staticPodPath.\n%s", s.product, s.role, s.product, s.role, out)
	return err
}

// validImage checks ref as the kubelet and the container runtimes parse an
// image reference, so a typo fails here and not when the kubelet pulls.
func validImage(ref string) error {
	if ref == "" {
		return fmt.Errorf("--image must not be empty")
	}
	if _, err := reference.ParseNormalizedNamed(ref); err != nil {
		return fmt.Errorf("--image %q is not an image reference ([HOST[:PORT]/]NAME[:TAG][@DIGEST], lower case): %v", ref, err)
	}
	return nil
}

// caDirs are the host's CA certificates, mounted as kubeadm mounts them
// into its API server: /etc/ssl/certs always (Debian's bundle is a file
// there, and on Red Hat systems it is a link to /etc/pki/tls/certs), and
// /etc/pki where it exists on the machine writing the manifest, since the
// files there link into /etc/pki/ca-trust.
var caDirs = []string{"/etc/ssl/certs", "/etc/pki"}

// withHostRoots adds caDirs, read-only and created empty where the host
// has none (kubeadm's DirectoryOrCreate), to paths unless a path given
// already covers them.
func withHostRoots(paths []hostPath) []hostPath {
	out := slices.Clone(paths)
	for i, dir := range caDirs {
		if i > 0 {
			if _, err := os.Stat(dir); err != nil {
				continue
			}
		}
		if !slices.ContainsFunc(out, func(p hostPath) bool { return within(dir, p.dir) }) {
			out = append(out, hostPath{dir: dir, optional: true})
		}
	}
	return out
}

var notLabelChars = regexp.MustCompile(`[^a-z0-9]+`)

// volumeName makes a DNS label from a host path (/etc/gcp/pki becomes
// etc-gcp-pki), unique among used.
func volumeName(dir string, used map[string]bool) string {
	base := strings.Trim(notLabelChars.ReplaceAllString(strings.ToLower(dir), "-"), "-")
	if base == "" {
		base = "root"
	}
	if len(base) > 56 {
		base = strings.TrimRight(base[:56], "-")
	}
	name := base
	for i := 2; used[name]; i++ {
		name = base + "-" + strconv.Itoa(i)
	}
	used[name] = true
	return name
}
