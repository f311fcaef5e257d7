package pki_test

import (
	"bytes"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

// ensure runs Ensure; without etcd members given it asks for one, member
// "gcp" on loopback, so that every kind of file is there.
func ensure(t *testing.T, o pki.Options) *pki.Files {
	t.Helper()
	if o.EtcdMembers == nil {
		o.EtcdMembers = []pki.EtcdMember{{Name: "gcp"}}
	}
	f, err := pki.Ensure(o)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return f
}

// certFiles and keyFiles list every file Ensure manages, by kind.
func certFiles(f *pki.Files) []string {
	return []string{f.CACert, f.ServingCert, f.AdminCert, f.ControllersCert, f.FrontProxyCACert, f.FrontProxyClientCert,
		f.EtcdCACert, f.EtcdClientCert, f.ServiceAccountPublicKey}
}

func keyFiles(f *pki.Files) []string {
	return []string{f.CAKey, f.ServingKey, f.AdminKey, f.ControllersKey, f.FrontProxyCAKey, f.FrontProxyClientKey,
		f.EtcdCAKey, f.EtcdClientKey, f.ServiceAccountKey}
}

// snapshot reads every file Ensure manages; a missing file maps to nil.
func snapshot(t *testing.T, f *pki.Files) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, p := range append(certFiles(f), keyFiles(f)...) {
		data, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out[p] = data
	}
	return out
}

// changed lists the base names of files whose contents differ.
func changed(before, after map[string][]byte) []string {
	var out []string
	for p := range maps.Keys(before) {
		if !bytes.Equal(before[p], after[p]) {
			out = append(out, filepath.Base(p))
		}
	}
	slices.Sort(out)
	return out
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := certutil.CertsFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(certs) != 1 {
		t.Fatalf("%s: %d certificates", path, len(certs))
	}
	return certs[0]
}

func pool(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	p, err := certutil.NewPool(caFile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, data)
}

// TestEnsureCreatesFilesWithModes, also with NoSync, which writes the
// same files without syncing them.
func TestEnsureCreatesFilesWithModes(t *testing.T) {
	t.Parallel()
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoSync=%v", noSync), func(t *testing.T) {
			t.Parallel()
			ensureCreatesFilesWithModes(t, noSync)
		})
	}
}

func ensureCreatesFilesWithModes(t *testing.T, noSync bool) {
	dir := filepath.Join(t.TempDir(), "data", "pki")
	o := pki.Options{Dir: dir, NoSync: noSync}
	f := ensure(t, o)

	if *f != *pki.FilesIn(dir) {
		t.Errorf("Ensure returned %+v, FilesIn says %+v", *f, *pki.FilesIn(dir))
	}
	if got := mode(t, dir); got != 0o700 {
		t.Errorf("dir mode %o, want 700", got)
	}
	for _, p := range keyFiles(f) {
		if got := mode(t, p); got != 0o600 {
			t.Errorf("%s: mode %o, want 600", filepath.Base(p), got)
		}
	}
	for _, p := range certFiles(f) {
		if got := mode(t, p); got != 0o644 {
			t.Errorf("%s: mode %o, want 644", filepath.Base(p), got)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Every file but the etcd CA's is at the top, beside the etcd dir.
	if len(entries) != len(keyFiles(f))+len(certFiles(f))-2+1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("dir holds %v: stray files", names)
	}

	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	writeFile(t, kubeconfig, []byte("old"))
	if err := os.Chmod(kubeconfig, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := o.WriteKubeconfig(kubeconfig, "https://127.0.0.1:6443", f.CACert, f.AdminCert, f.AdminKey, "gcp"); err != nil {
		t.Fatal(err)
	}
	if got := mode(t, kubeconfig); got != 0o600 {
		t.Errorf("kubeconfig mode %o, want 600", got)
	}
}

func TestEnsureReusesFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := ensure(t, pki.Options{Dir: dir, ServingSANs: []string{"gcp.example.com"}})
	before := snapshot(t, f)

	// Loosened permissions are tightened again without replacing anything.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.CAKey, 0o644); err != nil {
		t.Fatal(err)
	}
	ensure(t, pki.Options{Dir: dir, ServingSANs: []string{"gcp.example.com"}})
	if c := changed(before, snapshot(t, f)); len(c) > 0 {
		t.Errorf("second Ensure changed %v", c)
	}
	if got := mode(t, dir); got != 0o700 {
		t.Errorf("dir mode %o, want 700", got)
	}
	if got := mode(t, f.CAKey); got != 0o600 {
		t.Errorf("ca.key mode %o, want 600", got)
	}
}

func TestAddingSANReissuesOnlyServingCert(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := ensure(t, pki.Options{Dir: dir})
	before := snapshot(t, f)

	// A DNS name, then an IP address, each re-issue the serving cert alone.
	var sans []string
	for _, san := range []string{"gcp.example.com", "192.0.2.10"} {
		sans = append(sans, san)
		ensure(t, pki.Options{Dir: dir, ServingSANs: sans})
		after := snapshot(t, f)
		// The certificate is re-issued for the key it has: keys are never replaced.
		if c, want := changed(before, after), []string{"apiserver.crt"}; !slices.Equal(c, want) {
			t.Fatalf("adding %s changed %v, want %v", san, c, want)
		}
		for _, host := range sans {
			if _, err := readCert(t, f.ServingCert).Verify(x509.VerifyOptions{DNSName: host, Roots: pool(t, f.CACert)}); err != nil {
				t.Errorf("re-issued serving cert for %s: %v", host, err)
			}
		}
		before = after
	}

	// The same SANs again, or fewer, are no reason to re-issue.
	ensure(t, pki.Options{Dir: dir, ServingSANs: []string{"192.0.2.10", "GCP.example.com"}})
	ensure(t, pki.Options{Dir: dir})
	if c := changed(before, snapshot(t, f)); len(c) > 0 {
		t.Errorf("Ensure with known SANs changed %v", c)
	}
}

func TestServingCertVerifies(t *testing.T) {
	t.Parallel()
	f := ensure(t, pki.Options{Dir: t.TempDir(), ServingSANs: []string{" gcp.example.com ", "192.0.2.10", "2001:db8::1"}})
	cert := readCert(t, f.ServingCert)
	roots := pool(t, f.CACert)

	hosts := []string{"localhost", "127.0.0.1", "::1", "gcp.example.com", "192.0.2.10", "2001:db8::1"}
	if h, err := os.Hostname(); err == nil && !strings.Contains(h, "_") {
		hosts = append(hosts, strings.ToLower(h))
	}
	for _, host := range hosts {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("serving cert for %q: %v", host, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "other.example.com", Roots: roots}); err == nil {
		t.Error("serving cert verified for a name it was not issued for")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("serving cert is usable as a client certificate")
	}
	if d := time.Until(cert.NotAfter); d < 360*24*time.Hour || d > 366*24*time.Hour {
		t.Errorf("serving cert valid for %v more, want about a year", d)
	}
	if d := time.Until(readCert(t, f.CACert).NotAfter); d < 9*365*24*time.Hour {
		t.Errorf("CA valid for %v more, want about ten years", d)
	}
}

func TestClientCerts(t *testing.T) {
	t.Parallel()
	f := ensure(t, pki.Options{Dir: t.TempDir()})
	for _, tc := range []struct {
		name, cert, ca, otherCA string
		cn                      string
		orgs                    []string
	}{
		{"admin", f.AdminCert, f.CACert, f.FrontProxyCACert, "gcp-admin", []string{"system:masters"}},
		{"etcd client", f.EtcdClientCert, f.EtcdCACert, f.CACert, "gcp-apiserver-etcd-client", nil},
		{"front-proxy client", f.FrontProxyClientCert, f.FrontProxyCACert, f.CACert, pki.FrontProxyClientUser, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := readCert(t, tc.cert)
			if c.Subject.CommonName != tc.cn || !slices.Equal(c.Subject.Organization, tc.orgs) {
				t.Errorf("subject CN=%q O=%q, want CN=%q O=%q", c.Subject.CommonName, c.Subject.Organization, tc.cn, tc.orgs)
			}
			clientAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool(t, tc.ca), KeyUsages: clientAuth}); err != nil {
				t.Errorf("as client cert: %v", err)
			}
			// The two CAs are separate, so a cluster client certificate
			// cannot pose as the front proxy, nor the reverse.
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool(t, tc.otherCA), KeyUsages: clientAuth}); err == nil {
				t.Errorf("verified against %s too", filepath.Base(tc.otherCA))
			}
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool(t, tc.ca), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
				t.Error("client cert is usable as a serving certificate")
			}
		})
	}
}

func TestServiceAccountKeyPair(t *testing.T) {
	t.Parallel()
	f := ensure(t, pki.Options{Dir: t.TempDir()})
	key, err := keyutil.PrivateKeyFromFile(f.ServiceAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok || rsaKey.N.BitLen() != 2048 {
		t.Fatalf("sa.key is %T, want a 2048-bit RSA key", key)
	}
	pubs, err := keyutil.PublicKeysFromFile(f.ServiceAccountPublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(pubs) != 1 || !rsaKey.PublicKey.Equal(pubs[0]) {
		t.Fatalf("sa.pub holds %v, want the public half of sa.key", pubs)
	}
}

func TestIssueClientCert(t *testing.T) {
	t.Parallel()
	f := ensure(t, pki.Options{Dir: t.TempDir()})
	certPEM, keyPEM, err := pki.IssueClientCert(f.CACert, f.CAKey, "alice", []string{"dev"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	c := certs[0]
	if c.Subject.CommonName != "alice" || !slices.Equal(c.Subject.Organization, []string{"dev"}) {
		t.Errorf("subject %v, want CN=alice O=dev", c.Subject)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool(t, f.CACert), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Error(err)
	}
	if d := time.Until(c.NotAfter); d > time.Hour || d < 50*time.Minute {
		t.Errorf("valid for %v more, want an hour", d)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Errorf("key does not match certificate: %v", err)
	}

	for _, tc := range []struct {
		name          string
		caCert, caKey string
		user          string
		validity      time.Duration
	}{
		{"no user", f.CACert, f.CAKey, "", time.Hour},
		{"no validity", f.CACert, f.CAKey, "alice", 0},
		{"missing CA", filepath.Join(f.Dir, "nope.crt"), f.CAKey, "alice", time.Hour},
		{"key of another CA", f.CACert, f.FrontProxyCAKey, "alice", time.Hour},
		{"leaf as CA", f.AdminCert, f.AdminKey, "alice", time.Hour},
	} {
		if _, _, err := pki.IssueClientCert(tc.caCert, tc.caKey, tc.user, nil, tc.validity); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestEnsureRejectsBadOptions(t *testing.T) {
	t.Parallel()
	if _, err := pki.Ensure(pki.Options{}); err == nil {
		t.Error("Ensure without a directory succeeded")
	}
	dir := filepath.Join(t.TempDir(), "pki")
	_, err := pki.Ensure(pki.Options{Dir: dir, ServingSANs: []string{"https://gcp.example.com"}})
	if err == nil || !strings.Contains(err.Error(), "https://gcp.example.com") {
		t.Errorf("bad SAN: got %v, want an error naming it", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Ensure with a bad SAN created %s", dir)
	}
}
