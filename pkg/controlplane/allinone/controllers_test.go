package allinone

import (
	"path/filepath"
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

// The in-process controllers ask for uncompressed responses: they share
// the API server's process, so compression would only cost CPU and an
// inflate window per watch.
func TestControllersConfigWithoutCompression(t *testing.T) {
	dir := t.TempDir()
	files, err := pki.Ensure(pki.Options{Dir: filepath.Join(dir, "pki")})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, ControllersKubeconfigName)
	if err := pki.WriteKubeconfig(kubeconfig, "https://127.0.0.1:6443", files.CACert, files.ControllersCert, files.ControllersKey, "gcp"); err != nil {
		t.Fatal(err)
	}
	cfg, err := controllersConfig(kubeconfig, files, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Kubeconfig.DisableCompression {
		t.Fatal("the in-process controllers' client asks for compressed responses")
	}
}
