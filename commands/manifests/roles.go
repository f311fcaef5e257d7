package manifests

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	cliflag "k8s.io/component-base/cli/flag"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/pkg/layering"
)

// probe is where the kubelet (or an operator) checks that a running role
// is alive and ready, over HTTP(S) without credentials.
type probe struct {
	scheme      string // HTTP or HTTPS
	host        string
	port        int
	live, ready string // paths
}

// role is one part of gcp that runs as its own process.
type role struct {
	// summary names the role in a unit's Description.
	summary string
	// cpu and memory are the static pod's requests, as kubeadm's.
	cpu, memory string
	// hostRoots says the role's static pod mounts the host's CA
	// certificates: the API server checks OIDC issuers and webhooks that
	// may have no certificateAuthority of their own against them.
	hostRoots bool
	// defaults are flag values a manifest sets when the flags do not:
	// places on the host instead of under the working directory.
	defaults map[string]string
	// flags returns the role's own flag sets, bound to fresh options, and
	// a check to call once they are parsed: it returns every problem with
	// them, and where to probe the role (nil when it serves nothing).
	flags func() (*cliflag.NamedFlagSets, func() (*probe, []error))
}

// roleNames are the roles in the order help lists them.
var roleNames = []string{"etcd", "apiserver", "controllers"}

// roles returns the roles of the stack's control plane, whose product is
// called name. The stack is composed once, here; if that fails, every
// role's check returns the error.
func roles(name string, stack layering.Stack) map[string]role {
	comp, composeErr := stack.Compose()
	if composeErr != nil {
		composeErr = fmt.Errorf("composing the stack: %w", composeErr)
	}
	return map[string]role{
		"etcd": {
			summary: "etcd member", cpu: "100m", memory: "100Mi",
			defaults: map[string]string{"data-dir": "/var/lib/" + name + "/etcd"},
			flags:    etcdFlags,
		},
		"apiserver": {
			summary: "API server", cpu: "250m", hostRoots: true,
			flags: apiserverFlags(comp, composeErr),
		},
		"controllers": {
			summary: "controllers", cpu: "200m",
			flags: controllersFlags(comp, composeErr),
		},
	}
}

func etcdFlags() (*cliflag.NamedFlagSets, func() (*probe, []error)) {
	o := etcd.NewOptions()
	fss := &cliflag.NamedFlagSets{}
	o.AddFlags(fss)
	return fss, func() (*probe, []error) {
		errs := o.Validate()
		// The metrics URL serves /livez and /readyz without client
		// certificates, as kubeadm's etcd on http://127.0.0.1:2381.
		for _, raw := range o.ListenMetricsURLs {
			u, err := url.Parse(raw)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
				continue
			}
			port, err := strconv.Atoi(u.Port())
			if err != nil {
				continue
			}
			scheme := "HTTP"
			if u.Scheme == "https" {
				scheme = "HTTPS"
			}
			// A learner's /readyz fails its non_learner check until it is
			// promoted, which an operator does once it serves; ready is
			// everything else (reads, data not corrupt).
			return &probe{scheme: scheme, host: probeHost(u.Hostname()), port: port, live: "/livez", ready: "/readyz?exclude=non_learner"}, errs
		}
		return nil, errs
	}
}

func apiserverFlags(comp composition.Composition, composeErr error) func() (*cliflag.NamedFlagSets, func() (*probe, []error)) {
	return func() (*cliflag.NamedFlagSets, func() (*probe, []error)) {
		o := apiserver.NewOptions(comp)
		fss := &cliflag.NamedFlagSets{}
		o.AddFlags(fss)
		return fss, func() (*probe, []error) {
			if composeErr != nil {
				return nil, []error{composeErr}
			}
			completed, err := o.Complete()
			if err != nil {
				return nil, []error{err}
			}
			errs := completed.Validate()
			if o.SecureServing.BindPort == 0 {
				return nil, errs
			}
			return &probe{scheme: "HTTPS", host: probeHost(ipString(o.SecureServing.BindAddress)), port: o.SecureServing.BindPort,
				live: "/livez", ready: "/readyz"}, errs
		}
	}
}

func controllersFlags(comp composition.Composition, composeErr error) func() (*cliflag.NamedFlagSets, func() (*probe, []error)) {
	return func() (*cliflag.NamedFlagSets, func() (*probe, []error)) {
		o := controllers.NewOptions(comp.Controllers)
		fss := &cliflag.NamedFlagSets{}
		o.AddFlags(fss)
		return fss, func() (*probe, []error) {
			if composeErr != nil {
				return nil, []error{composeErr}
			}
			errs := o.Validate()
			if o.SecureServing.BindPort == 0 {
				return nil, errs
			}
			// kube-controller-manager's probes: /healthz over HTTPS,
			// always allowed without credentials.
			return &probe{scheme: "HTTPS", host: probeHost(ipString(o.SecureServing.BindAddress)), port: o.SecureServing.BindPort,
				live: "/healthz", ready: "/healthz"}, errs
		}
	}
}

func ipString(ip net.IP) string {
	if ip == nil {
		return ""
	}
	return ip.String()
}

// probeHost is the address to probe a listener on: loopback when it
// listens on every interface.
func probeHost(host string) string {
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return "127.0.0.1"
	}
	return host
}

// errNoProbe says why a static pod cannot be made for a role that serves
// nothing to probe.
func errNoProbe(name string) error {
	switch name {
	case "etcd":
		return errors.New("a static pod needs --listen-metrics-urls (kubeadm's etcd uses http://127.0.0.1:2381) so the kubelet can probe /livez and /readyz")
	default:
		return fmt.Errorf("a static pod of %s needs --secure-port other than 0 so the kubelet can probe it", name)
	}
}
