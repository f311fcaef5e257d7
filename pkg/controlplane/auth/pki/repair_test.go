package pki_test

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

// TestBrokenFilesAreErrors damages one file in a complete directory and
// checks that Ensure names it in an error and replaces nothing: a new CA or
// service account key would lock out every user and token.
func TestBrokenFilesAreErrors(t *testing.T) {
	t.Parallel()
	other := ensure(t, pki.Options{Dir: t.TempDir()})
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, f *pki.Files)
		want   string
	}{
		{"corrupt CA key", func(t *testing.T, f *pki.Files) { writeFile(t, f.CAKey, []byte("not a key")) }, "ca.key"},
		{"truncated CA key", func(t *testing.T, f *pki.Files) {
			data, err := os.ReadFile(f.CAKey)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, f.CAKey, data[:len(data)/2])
		}, "ca.key"},
		{"CA key of another CA", func(t *testing.T, f *pki.Files) { copyFile(t, other.CAKey, f.CAKey) }, "ca.key"},
		{"CA key missing", func(t *testing.T, f *pki.Files) { os.Remove(f.CAKey) }, "ca.key"},
		{"corrupt CA cert", func(t *testing.T, f *pki.Files) { writeFile(t, f.CACert, []byte("junk")) }, "ca.crt"},
		{"CA cert that is no CA", func(t *testing.T, f *pki.Files) { copyFile(t, f.AdminCert, f.CACert) }, "ca.crt"},
		{"corrupt front-proxy CA key", func(t *testing.T, f *pki.Files) { writeFile(t, f.FrontProxyCAKey, nil) }, "front-proxy-ca.key"},
		{"corrupt service account key", func(t *testing.T, f *pki.Files) { writeFile(t, f.ServiceAccountKey, []byte("x")) }, "sa.key"},
		{"service account key missing", func(t *testing.T, f *pki.Files) { os.Remove(f.ServiceAccountKey) }, "sa.key"},
		{"service account public key of another key", func(t *testing.T, f *pki.Files) {
			copyFile(t, other.ServiceAccountPublicKey, f.ServiceAccountPublicKey)
		}, "sa.pub"},
		{"corrupt admin key", func(t *testing.T, f *pki.Files) { writeFile(t, f.AdminKey, []byte("x")) }, "admin.key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := ensure(t, pki.Options{Dir: t.TempDir()})
			tc.damage(t, f)
			before := snapshot(t, f)
			_, err := pki.Ensure(pki.Options{Dir: f.Dir})
			if err == nil {
				t.Fatal("Ensure accepted the damaged directory")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %s", err, tc.want)
			}
			if c := changed(before, snapshot(t, f)); len(c) > 0 {
				t.Errorf("Ensure replaced %v", c)
			}
		})
	}
}

// TestRepairs covers states a crash, a deleted file or time leave behind,
// which Ensure repairs without touching the CA.
func TestRepairs(t *testing.T) {
	t.Parallel()
	other := ensure(t, pki.Options{Dir: t.TempDir()})
	issueAdmin := func(t *testing.T, f *pki.Files, validity time.Duration) {
		certPEM, keyPEM, err := pki.IssueClientCert(f.CACert, f.CAKey, pki.AdminUser, []string{pki.MastersGroup}, validity)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, f.AdminCert, certPEM)
		writeFile(t, f.AdminKey, keyPEM)
	}
	for _, tc := range []struct {
		name     string
		damage   func(t *testing.T, f *pki.Files)
		reissued []string
	}{
		{"CA cert missing is re-signed with the same key", func(t *testing.T, f *pki.Files) { os.Remove(f.CACert) }, []string{"ca.crt"}},
		{"service account public key missing", func(t *testing.T, f *pki.Files) { os.Remove(f.ServiceAccountPublicKey) }, []string{"sa.pub"}},
		{"admin cert missing", func(t *testing.T, f *pki.Files) { os.Remove(f.AdminCert) }, []string{"admin.crt"}},
		{"admin key from an interrupted re-issue", func(t *testing.T, f *pki.Files) { copyFile(t, other.AdminKey, f.AdminKey) }, []string{"admin.crt"}},
		{"admin cert expiring within 30 days", func(t *testing.T, f *pki.Files) { issueAdmin(t, f, 10*24*time.Hour) }, []string{"admin.crt"}},
		{"admin cert with 60 days left is kept", func(t *testing.T, f *pki.Files) { issueAdmin(t, f, 60*24*time.Hour) }, nil},
		{"admin cert without system:masters", func(t *testing.T, f *pki.Files) {
			certPEM, keyPEM, err := pki.IssueClientCert(f.CACert, f.CAKey, pki.AdminUser, nil, 365*24*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, f.AdminCert, certPEM)
			writeFile(t, f.AdminKey, keyPEM)
		}, []string{"admin.crt"}},
		{"serving cert from another CA", func(t *testing.T, f *pki.Files) {
			copyFile(t, other.ServingCert, f.ServingCert)
			copyFile(t, other.ServingKey, f.ServingKey)
		}, []string{"apiserver.crt"}},
		{"front-proxy client cert from the cluster CA", func(t *testing.T, f *pki.Files) {
			certPEM, keyPEM, err := pki.IssueClientCert(f.CACert, f.CAKey, pki.FrontProxyClientUser, nil, 365*24*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, f.FrontProxyClientCert, certPEM)
			writeFile(t, f.FrontProxyClientKey, keyPEM)
		}, []string{"front-proxy-client.crt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := ensure(t, pki.Options{Dir: t.TempDir()})
			original := snapshot(t, f)
			tc.damage(t, f)
			damaged := snapshot(t, f)
			ensure(t, pki.Options{Dir: f.Dir})
			repaired := snapshot(t, f)

			if c := changed(damaged, repaired); !slices.Equal(c, tc.reissued) {
				t.Errorf("Ensure replaced %v, want %v", c, tc.reissued)
			}
			for _, p := range []string{f.CAKey, f.FrontProxyCAKey, f.ServiceAccountKey, f.ServiceAccountPublicKey} {
				if !bytes.Equal(original[p], repaired[p]) {
					t.Errorf("%s changed", filepath.Base(p))
				}
			}
			// Everything signed before still verifies against the CA now on
			// disk, and the re-issued certificates do too.
			clientAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
			if _, err := readCert(t, f.AdminCert).Verify(x509.VerifyOptions{Roots: pool(t, f.CACert), KeyUsages: clientAuth}); err != nil {
				t.Errorf("admin.crt: %v", err)
			}
			if _, err := readCert(t, f.EtcdClientCert).Verify(x509.VerifyOptions{Roots: pool(t, f.EtcdCACert), KeyUsages: clientAuth}); err != nil {
				t.Errorf("apiserver-etcd-client.crt: %v", err)
			}
			if _, err := readCert(t, f.FrontProxyClientCert).Verify(x509.VerifyOptions{Roots: pool(t, f.FrontProxyCACert), KeyUsages: clientAuth}); err != nil {
				t.Errorf("front-proxy-client.crt: %v", err)
			}
			if _, err := readCert(t, f.ServingCert).Verify(x509.VerifyOptions{DNSName: "localhost", Roots: pool(t, f.CACert)}); err != nil {
				t.Errorf("apiserver.crt: %v", err)
			}
			if d := time.Until(readCert(t, f.AdminCert).NotAfter); d < 30*24*time.Hour {
				t.Errorf("admin cert expires in %v", d)
			}
		})
	}
}
