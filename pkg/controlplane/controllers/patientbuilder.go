package controllers

import (
	"context"
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

func (b patientBuilder) ConfigOrDie(name string) *rest.Config {
	cfg, err := b.Config(name)
	if err != nil {
		klog.Fatal(err)
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

func (b patientBuilder) ClientOrDie(name string) kubernetes.Interface {
	client, err := b.Client(name)
	if err != nil {
		klog.Fatal(err)
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

func (b patientBuilder) DiscoveryClientOrDie(name string) discovery.DiscoveryInterface {
	client, err := b.DiscoveryClient(name)
	if err != nil {
		klog.Fatal(err)
	}
	return client
}

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
