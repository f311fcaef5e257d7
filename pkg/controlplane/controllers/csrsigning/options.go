package csrsigning

import (
	"errors"
	"fmt"
	"time"

	cliflag "k8s.io/component-base/cli/flag"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// DefaultClusterSigningDuration is --cluster-signing-duration's default,
// one year, as kube-controller-manager's.
const DefaultClusterSigningDuration = 365 * 24 * time.Hour

// Options are the signer's own options, kube-controller-manager's
// --cluster-signing-* flags. Without a CA the signer does not sign.
type Options struct {
	// ClusterSigningCertFile and ClusterSigningKeyFile are the PEM CA
	// certificate and key that sign certificates for every signer gcp
	// serves (--cluster-signing-cert-file, --cluster-signing-key-file).
	ClusterSigningCertFile, ClusterSigningKeyFile string
	// KubeAPIServerClientCertFile and KubeAPIServerClientKeyFile are a CA
	// for the kubernetes.io/kube-apiserver-client signer only
	// (--cluster-signing-kube-apiserver-client-{cert,key}-file); they
	// exclude the cluster-wide pair.
	KubeAPIServerClientCertFile, KubeAPIServerClientKeyFile string
	// Duration is the longest lifetime of a signed certificate
	// (--cluster-signing-duration); a CSR may ask for less with
	// spec.expirationSeconds. Zero means DefaultClusterSigningDuration.
	Duration time.Duration
}

// NewOptions returns the defaults: no CA, a one-year lifetime.
func NewOptions() *Options { return &Options{Duration: DefaultClusterSigningDuration} }

var _ controllers.ClusterSigningCAUser = (*Options)(nil)

// UseClusterSigningCA makes the signer sign with ca, as
// --cluster-signing-{cert,key}-file do; the controller manager's options
// call it with their ClusterSigningCA (`gcp start` sets the cluster CA).
func (s *Options) UseClusterSigningCA(ca controllers.CAFiles) {
	s.ClusterSigningCertFile, s.ClusterSigningKeyFile = ca.CertFile, ca.KeyFile
}

// KubeAPIServerClientFiles returns the CA files for the
// kubernetes.io/kube-apiserver-client signer: its own pair if either is
// set, otherwise the cluster-wide pair, as kube-controller-manager picks.
func (s *Options) KubeAPIServerClientFiles() (certFile, keyFile string) {
	if s.KubeAPIServerClientCertFile != "" || s.KubeAPIServerClientKeyFile != "" {
		return s.KubeAPIServerClientCertFile, s.KubeAPIServerClientKeyFile
	}
	return s.ClusterSigningCertFile, s.ClusterSigningKeyFile
}

// AddFlags adds kube-controller-manager's --cluster-signing-* flags that
// apply to gcp, in section "csrsigning controller": the cluster-wide CA,
// the kube-apiserver-client signer's own CA, and the longest lifetime.
func (s *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("csrsigning controller")
	fs.StringVar(&s.ClusterSigningCertFile, "cluster-signing-cert-file", s.ClusterSigningCertFile,
		"Filename containing a PEM-encoded X509 CA certificate used to issue cluster-scoped certificates.  If specified, no more specific --cluster-signing-* flag may be specified.")
	fs.StringVar(&s.ClusterSigningKeyFile, "cluster-signing-key-file", s.ClusterSigningKeyFile,
		"Filename containing a PEM-encoded RSA or ECDSA private key used to sign cluster-scoped certificates.  If specified, no more specific --cluster-signing-* flag may be specified.")
	fs.StringVar(&s.KubeAPIServerClientCertFile, "cluster-signing-kube-apiserver-client-cert-file", s.KubeAPIServerClientCertFile,
		"Filename containing a PEM-encoded X509 CA certificate used to issue certificates for the kubernetes.io/kube-apiserver-client signer.  If specified, --cluster-signing-{cert,key}-file must not be set.")
	fs.StringVar(&s.KubeAPIServerClientKeyFile, "cluster-signing-kube-apiserver-client-key-file", s.KubeAPIServerClientKeyFile,
		"Filename containing a PEM-encoded RSA or ECDSA private key used to sign certificates for the kubernetes.io/kube-apiserver-client signer.  If specified, --cluster-signing-{cert,key}-file must not be set.")
	fs.DurationVar(&s.Duration, "cluster-signing-duration", s.Duration,
		"The max length of duration signed certificates will be given.  Individual CSRs may request shorter certs by setting spec.expirationSeconds.")
}

// Validate checks that each CA is a whole pair, that the cluster-wide and
// the signer's own pair are not both given, and that the duration is
// positive.
func (s *Options) Validate() []error {
	var errs []error
	pair := func(flag, cert, key string) {
		switch {
		case cert == "" && key != "":
			errs = append(errs, fmt.Errorf("%q: cannot specify key without cert", flag))
		case cert != "" && key == "":
			errs = append(errs, fmt.Errorf("%q: cannot specify cert without key", flag))
		}
	}
	pair("cluster-signing", s.ClusterSigningCertFile, s.ClusterSigningKeyFile)
	pair("cluster-signing-kube-apiserver-client", s.KubeAPIServerClientCertFile, s.KubeAPIServerClientKeyFile)
	if (s.ClusterSigningCertFile != "" || s.ClusterSigningKeyFile != "") &&
		(s.KubeAPIServerClientCertFile != "" || s.KubeAPIServerClientKeyFile != "") {
		errs = append(errs, errors.New("cannot specify --cluster-signing-{cert,key}-file and other --cluster-signing-*-file flags at the same time"))
	}
	if s.Duration <= 0 {
		errs = append(errs, fmt.Errorf("--cluster-signing-duration must be positive, got %v", s.Duration))
	}
	return errs
}
