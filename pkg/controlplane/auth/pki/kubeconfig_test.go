package pki_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

// TestKubeconfigRoundTrip writes the admin kubeconfig, removes the PKI
// directory to show nothing refers to it, loads the file the way kubectl
// does and makes a mutual-TLS request with the result.
func TestKubeconfigRoundTrip(t *testing.T) {
	t.Parallel()
	f := ensure(t, pki.Options{Dir: t.TempDir()})
	serving, err := tls.LoadX509KeyPair(f.ServingCert, f.ServingKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer := r.TLS.PeerCertificates[0].Subject
		_, _ = io.WriteString(w, peer.CommonName+"/"+strings.Join(peer.Organization, ","))
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{serving},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool(t, f.CACert),
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	want := snapshot(t, f)
	path := filepath.Join(t.TempDir(), "kube", "admin.kubeconfig")
	if err := pki.WriteKubeconfig(path, srv.URL, f.CACert, f.AdminCert, f.AdminKey, "gcp"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(f.Dir); err != nil {
		t.Fatal(err)
	}

	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "gcp" {
		t.Errorf("current context %q, want gcp", cfg.CurrentContext)
	}
	if ctx := cfg.Contexts["gcp"]; ctx == nil || ctx.Cluster != "gcp" || ctx.AuthInfo != "gcp" {
		t.Errorf("context gcp is %+v, want cluster and user gcp", ctx)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != srv.URL {
		t.Errorf("host %q, want %q", rc.Host, srv.URL)
	}
	if !bytes.Equal(rc.CAData, want[f.CACert]) || !bytes.Equal(rc.CertData, want[f.AdminCert]) || !bytes.Equal(rc.KeyData, want[f.AdminKey]) {
		t.Error("rest config does not carry the CA, admin cert and key data")
	}
	if rc.CAFile != "" || rc.CertFile != "" || rc.KeyFile != "" {
		t.Errorf("rest config refers to files %q %q %q; want embedded data", rc.CAFile, rc.CertFile, rc.KeyFile)
	}

	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(body), pki.AdminUser+"/"+pki.MastersGroup; got != want {
		t.Errorf("server saw client %q, want %q", got, want)
	}
}

func TestWriteKubeconfigRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := ensure(t, pki.Options{Dir: t.TempDir()})
	for _, tc := range []struct {
		name                string
		server, ca, crt, ky string
		context             string
	}{
		{"cert and key do not match", "https://127.0.0.1:6443", f.CACert, f.AdminCert, f.ServingKey, "gcp"},
		{"CA file is a key", "https://127.0.0.1:6443", f.CAKey, f.AdminCert, f.AdminKey, "gcp"},
		{"missing key", "https://127.0.0.1:6443", f.CACert, f.AdminCert, filepath.Join(f.Dir, "nope.key"), "gcp"},
		{"no server", "", f.CACert, f.AdminCert, f.AdminKey, "gcp"},
		{"no context name", "https://127.0.0.1:6443", f.CACert, f.AdminCert, f.AdminKey, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kubeconfig")
			if err := pki.WriteKubeconfig(path, tc.server, tc.ca, tc.crt, tc.ky, tc.context); err == nil {
				t.Fatal("no error")
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("a kubeconfig was written despite the error")
			}
		})
	}
}
