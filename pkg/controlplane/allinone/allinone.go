// Package allinone runs a whole control plane in one process from one data
// directory: PKI, an embedded etcd member on a private unix socket, and the
// API server. It is what `gcp start` and the test server run.
package allinone

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"runtime/debug"
	"strconv"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// AdminKubeconfigName is the admin kubeconfig's file name in the data dir.
const AdminKubeconfigName = pki.AdminKubeconfigName

// ControlPlane is a started all-in-one control plane.
type ControlPlane struct {
	// DataDir is the absolute data directory.
	DataDir string
	// URL is the API server's https URL.
	URL string
	// AdminKubeconfig is the path of the system:masters kubeconfig.
	AdminKubeconfig string
	// PKI is the certificate set in the data dir.
	PKI *pki.Files

	ready  chan struct{}
	done   chan struct{}
	err    error
	cancel context.CancelFunc
}

// apiExtensionsConfig is the apiextensions server's generic configuration,
// nil without one.
func apiExtensionsConfig(cfg *apiserver.Config) *genericapiserver.Config {
	if cfg.APIExtensions == nil {
		return nil
	}
	return &cfg.APIExtensions.GenericConfig.Config
}

// aggregatorConfig is the aggregator's generic configuration, nil without
// one.
func aggregatorConfig(cfg *apiserver.Config) *genericapiserver.Config {
	if cfg.Aggregator == nil {
		return nil
	}
	return &cfg.Aggregator.GenericConfig.Config
}

// ControllersKubeconfigName is the controllers' kubeconfig in the data dir.
const ControllersKubeconfigName = pki.ControllersKubeconfigName

// ControllersConfig configures descriptors' controllers to run in this
// process against c, as `gcp start` runs them: the controllers' kubeconfig
// of the data dir, a service account per controller, the cluster CA for
// the CSR signer, no serving, no leader election; selection is as
// --controllers. Start uses it when Options.Controllers is set; a caller
// that wants to choose when they start (after installing CRDs, say) runs
// controllers.Run with it.
func ControllersConfig(c *ControlPlane, descriptors []controllers.Descriptor, selection []string) (*controllers.Config, error) {
	return controllersConfig(filepath.Join(c.DataDir, ControllersKubeconfigName), c.PKI, descriptors, selection)
}

func controllersConfig(kubeconfig string, files *pki.Files, descriptors []controllers.Descriptor, selection []string) (*controllers.Config, error) {
	o := controllers.NewOptions(descriptors)
	o.Kubeconfig = kubeconfig
	o.Generic.Controllers = selection
	// The controllers that sign certificates (the CSR signer) sign with
	// the cluster CA, the one the API server trusts for client certificates.
	o.ClusterSigningCA = controllers.CAFiles{CertFile: files.CACert, KeyFile: files.CAKey}
	o.SecureServing.BindPort = 0
	o.Generic.LeaderElection.LeaderElect = false
	cfg, err := o.Config()
	if err != nil {
		return nil, fmt.Errorf("controllers: %w", err)
	}
	// The controllers run in the API server's process: compressing their
	// lists and watches would cost CPU on both ends and keep a 32 KiB
	// inflate window per watch (two watches per custom resource, for the
	// garbage collector and the quota controller) to save no bandwidth.
	cfg.Kubeconfig.DisableCompression = true
	return cfg, nil
}

// serverURL is the https URL clients reach the server at: the bind address,
// or loopback when bound to every interface.
func serverURL(bindAddress string, port int) string {
	host := bindAddress
	if ip := net.ParseIP(host); ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// Ready is closed once the control plane is ready: its API server answers
// /readyz with 200 (every readiness check passes: etcd, the post-start
// hooks and the informers they wait for). The controllers of
// Options.Controllers have been started by then; they are not waited for.
// It is never closed if the control plane stops first.
func (c *ControlPlane) Ready() <-chan struct{} { return c.ready }

// Wait blocks until the control plane has stopped and returns why.
func (c *ControlPlane) Wait() error {
	<-c.done
	return c.err
}

// Done is closed once the control plane has stopped.
func (c *ControlPlane) Done() <-chan struct{} { return c.done }

// Close stops the control plane, as the end of Start's ctx does, waits
// until it has stopped and returns why (Wait). It is idempotent and safe
// to call concurrently.
func (c *ControlPlane) Close() error {
	c.cancel()
	return c.Wait()
}

// releaseStartupGarbage returns the memory that building the servers
// allocated and dropped (OpenAPI specs, schemes, handlers: about as much
// again as they keep) to the operating system once the server is ready,
// instead of leaving it to the runtime's scavenger, which returns it over
// minutes. It costs one garbage collection, once.
func releaseStartupGarbage() { debug.FreeOSMemory() }
