package rootcacertpublisher

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
)

// Options are the publisher's own options.
type Options struct {
	// RootCAFile is the CA bundle published as kube-root-ca.crt
	// (--root-ca-file); empty means the CA the controller manager trusts
	// the API server with, its kubeconfig's.
	RootCAFile string
	// rootCA is RootCAFile's content, read by Complete.
	rootCA []byte
}

// AddFlags adds --root-ca-file, kube-controller-manager's flag, in section
// "rootcacertpublisher controller".
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	fss.FlagSet("rootcacertpublisher controller").StringVar(&o.RootCAFile, "root-ca-file", o.RootCAFile,
		"CA bundle published in every namespace as ConfigMap kube-root-ca.crt. Defaults to the kubeconfig's CA.")
}

// Validate has nothing to check without reading the file.
func (o *Options) Validate() []error { return nil }

// Complete reads RootCAFile, so that a missing file stops the start.
func (o *Options) Complete() error {
	if o.RootCAFile == "" {
		return nil
	}
	b, err := os.ReadFile(o.RootCAFile)
	if err != nil {
		return fmt.Errorf("--root-ca-file: %w", err)
	}
	o.rootCA = b
	return nil
}

// bundle returns the CA bundle to publish: the file's (read by Complete),
// else the CA of config, the controller's client configuration.
func (o *Options) bundle(config *rest.Config) ([]byte, error) {
	if len(o.rootCA) > 0 {
		return o.rootCA, nil
	}
	if len(config.CAData) > 0 || config.CAFile == "" {
		return config.CAData, nil
	}
	b, err := os.ReadFile(config.CAFile)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig's CA: %w", err)
	}
	return b, nil
}
