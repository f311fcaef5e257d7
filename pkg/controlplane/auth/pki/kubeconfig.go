package pki

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// WriteKubeconfig writes to path a kubeconfig for serverURL that trusts the
// CA in caFile and authenticates with the client certificate and key in
// clientCertFile and clientKeyFile. All three are embedded as data, so the
// file keeps working when copied elsewhere. Its cluster, user and context are
// all named contextName, which is the current context. The file is replaced
// atomically with mode 0600, since it holds a private key.
func WriteKubeconfig(path, serverURL, caFile, clientCertFile, clientKeyFile, contextName string) error {
	return writeKubeconfig(writer{}, path, serverURL, caFile, clientCertFile, clientKeyFile, contextName)
}

// WriteKubeconfig is the package's WriteKubeconfig, writing as Ensure with
// o does: without syncing the file to disk when o.NoSync.
func (o Options) WriteKubeconfig(path, serverURL, caFile, clientCertFile, clientKeyFile, contextName string) error {
	return writeKubeconfig(writer{noSync: o.NoSync}, path, serverURL, caFile, clientCertFile, clientKeyFile, contextName)
}

func writeKubeconfig(w writer, path, serverURL, caFile, clientCertFile, clientKeyFile, contextName string) error {
	if serverURL == "" || contextName == "" {
		return errors.New("pki: kubeconfig needs a server URL and a context name")
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if _, err := certutil.ParseCertsPEM(caPEM); err != nil {
		return fmt.Errorf("pki: CA file %s: %w", caFile, err)
	}
	certPEM, err := os.ReadFile(clientCertFile)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	keyPEM, err := os.ReadFile(clientKeyFile)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Errorf("pki: client certificate %s and key %s: %w", clientCertFile, clientKeyFile, err)
	}

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	cfg.CurrentContext = contextName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("pki: encoding kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := w.write(path, data, 0o600); err != nil {
		return fmt.Errorf("pki: writing kubeconfig: %w", err)
	}
	return nil
}

// File names of the kubeconfigs gcp writes beside its PKI directory: gcp
// start into its data dir, gcp pki into --kubeconfig-dir.
const (
	AdminKubeconfigName       = "admin.kubeconfig"
	ControllersKubeconfigName = "controllers.kubeconfig"
)

// Kubeconfig is a kubeconfig file and the client certificate it embeds.
type Kubeconfig struct {
	// Path is the kubeconfig file.
	Path string
	// CertFile and KeyFile are the client certificate and key it embeds.
	CertFile, KeyFile string
}

// Kubeconfigs returns the kubeconfigs gcp keeps in dir for f's client
// certificates: the admin's and the controller manager's.
func (f *Files) Kubeconfigs(dir string) []Kubeconfig {
	return []Kubeconfig{
		{Path: filepath.Join(dir, AdminKubeconfigName), CertFile: f.AdminCert, KeyFile: f.AdminKey},
		{Path: filepath.Join(dir, ControllersKubeconfigName), CertFile: f.ControllersCert, KeyFile: f.ControllersKey},
	}
}

// KubeconfigServer returns the server URL of the current context of the
// kubeconfig at path, so that a renewed kubeconfig keeps pointing where it
// did.
func KubeconfigServer(path string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return "", fmt.Errorf("pki: %w", err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.Clusters[ctx.Cluster].Server == "" {
		return "", fmt.Errorf("pki: %s has no current context with a cluster server", path)
	}
	return cfg.Clusters[ctx.Cluster].Server, nil
}
