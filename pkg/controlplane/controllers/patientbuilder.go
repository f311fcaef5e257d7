package controllers

import (
	"context"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/klog/v2"
)

// patientBuilder is a client builder that, while ctx lasts, tries again
// when building a controller's client fails for a reason that passes (the
// API server or etcd unavailable, a timeout, a dropped connection). With
// service account credentials, building one creates the controller's
// ServiceAccount and asks for a token: during an etcd election or outage
// that failed, the manager exited, and controllers that had just won the
// lease gave it up again (found by the chaos test). A failure that does
// not pass (403, a bad kubeconfig) is returned at once.
type patientBuilder struct {
	clientbuilder.ControllerClientBuilder
	ctx context.Context
}

// patientBackoff spaces the tries: 200 ms, doubling to 5 s, as long as ctx
// lasts.
var patientBackoff = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 5 * time.Second, Steps: 1 << 30}

func (b patientBuilder) Config(name string) (*rest.Config, error) {
	var cfg *rest.Config
	err := b.retry(name, func() (err error) {
		cfg, err = b.ControllerClientBuilder.Config(name)
		return err
	})
	return cfg, err
}

// ConfigOrDie is Config for callers of k8s.io/controller-manager's
// interface that expect no error. It does not exit the process (a library
// must not: `gcp start` runs etcd in it): on a failure it logs the error
// and returns a config whose every request fails with it (failedConfig).
func (b patientBuilder) ConfigOrDie(name string) *rest.Config {
	cfg, err := b.Config(name)
	if err != nil {
		return b.failedConfig(name, err)
	}
	return cfg
}

func (b patientBuilder) Client(name string) (kubernetes.Interface, error) {
	var client kubernetes.Interface
	err := b.retry(name, func() (err error) {
		client, err = b.ControllerClientBuilder.Client(name)
		return err
	})
	return client, err
}

// ClientOrDie is Client without an error, as ConfigOrDie is Config.
func (b patientBuilder) ClientOrDie(name string) kubernetes.Interface {
	client, err := b.Client(name)
	if err != nil {
		return kubernetes.NewForConfigOrDie(b.failedConfig(name, err))
	}
	return client
}

func (b patientBuilder) DiscoveryClient(name string) (discovery.DiscoveryInterface, error) {
	var client discovery.DiscoveryInterface
	err := b.retry(name, func() (err error) {
		client, err = b.ControllerClientBuilder.DiscoveryClient(name)
		return err
	})
	return client, err
}

// DiscoveryClientOrDie is DiscoveryClient without an error, as
// ConfigOrDie is Config.
func (b patientBuilder) DiscoveryClientOrDie(name string) discovery.DiscoveryInterface {
	client, err := b.DiscoveryClient(name)
	if err != nil {
		return discovery.NewDiscoveryClientForConfigOrDie(b.failedConfig(name, err))
	}
	return client
}

// failedConfig logs err and returns a client configuration whose every
// request fails with it, without dialing: what the *OrDie methods give a
// controller instead of ending the process. (The clients built from it
// cannot fail: it has no TLS files to read and a valid host.)
func (b patientBuilder) failedConfig(name string, err error) *rest.Config {
	klog.FromContext(b.ctx).Error(err, "Building a controller's client failed; its requests will fail", "controller", name)
	return &rest.Config{
		Host:          "https://client-build-failed.invalid",
		WrapTransport: func(http.RoundTripper) http.RoundTripper { return failingTransport{err} },
	}
}

// failingTransport fails every request with err.
type failingTransport struct{ err error }

func (t failingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, t.err }

// retry calls try until it succeeds, fails for good, or ctx is done.
func (b patientBuilder) retry(name string, try func() error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(b.ctx, patientBackoff, func(context.Context) (bool, error) {
		last = try()
		switch {
		case last == nil:
			return true, nil
		case transient(last):
			klog.FromContext(b.ctx).Info("Building a controller's client failed; trying again", "controller", name, "err", last)
			return false, nil
		default:
			return false, last
		}
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
