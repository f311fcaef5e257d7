// Package controllers runs gcp's generic controllers the way
// kube-controller-manager runs its own: each controller is a Descriptor
// (name, aliases, on by default or not, constructor), selected with
// --controllers, built with k8s.io/controller-manager's context (client
// builder, shared typed and metadata informers, a discovery REST mapper),
// started after leader election over a coordination.k8s.io Lease.
package controllers

import (
	"context"
	"time"

	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
)

// Controller is a constructed controller: Name and Run. A controller may
// also implement controller.HealthCheckable to add a /healthz check.
type Controller interface {
	controller.Interface
	// Run works until ctx is done, then returns.
	Run(ctx context.Context)
}

// Context is what a controller's constructor gets: k8s.io/controller-manager's
// controller context plus what gcp's controllers need besides.
type Context struct {
	app.ControllerContext
	// DynamicInformerFactory gives shared informers of unstructured
	// objects, for resources without generated clients (a consumer's
	// native group, custom resources). The manager starts it with the
	// typed and metadata factories, after every constructor has run; a
	// controller's client of its own identity comes from
	// dynamic.NewForConfig(c.ClientBuilder.ConfigOrDie(name)).
	DynamicInformerFactory dynamicinformer.DynamicSharedInformerFactory
	// ResourceInformers gives controllers that watch every resource one
	// informer per resource between them, stopped when no one holds it.
	ResourceInformers *ResourceInformers
	// RootCA is the CA bundle of the API server, published in every
	// namespace as ConfigMap kube-root-ca.crt.
	RootCA []byte
	// CSRSigning is the CA the CSR signing controller signs with.
	CSRSigning CSRSigning
}

// CSRSigning is the CSR signing controller's configuration,
// kube-controller-manager's --cluster-signing-* flags. Without a CA the
// signing controller does not start.
type CSRSigning struct {
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

// DefaultClusterSigningDuration is --cluster-signing-duration's default,
// one year, as kube-controller-manager's.
const DefaultClusterSigningDuration = 365 * 24 * time.Hour

// KubeAPIServerClientFiles returns the CA files for the
// kubernetes.io/kube-apiserver-client signer: its own pair if either is
// set, otherwise the cluster-wide pair, as kube-controller-manager picks.
func (s CSRSigning) KubeAPIServerClientFiles() (certFile, keyFile string) {
	if s.KubeAPIServerClientCertFile != "" || s.KubeAPIServerClientKeyFile != "" {
		return s.KubeAPIServerClientCertFile, s.KubeAPIServerClientKeyFile
	}
	return s.ClusterSigningCertFile, s.ClusterSigningKeyFile
}

// Descriptor describes one controller.
type Descriptor struct {
	// Name is the canonical name used by --controllers.
	Name string
	// Aliases are other names --controllers accepts for it.
	Aliases []string
	// DisabledByDefault leaves the controller off unless named.
	DisabledByDefault bool
	// New builds the controller; it must not start informers or work
	// before Run. A client for the controller's own identity comes from
	// c.ClientBuilder.Client(<its service account name>).
	New func(ctx context.Context, c Context) (Controller, error)
}
