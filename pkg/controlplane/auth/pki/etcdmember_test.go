package pki_test

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

func TestEtcdMemberCerts(t *testing.T) {
	t.Parallel()
	f := ensure(t, pki.Options{Dir: t.TempDir(), ServingSANs: []string{"gcp.example.com"}, EtcdMembers: []pki.EtcdMember{
		{Name: "etcd-0", Hosts: []string{"10.0.0.10", "etcd-0.example.com"}},
		{Name: "etcd-1", Hosts: []string{"10.0.0.11"}},
	}})
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	for member, hosts := range map[string][]string{
		"etcd-0": {"localhost", "127.0.0.1", "::1", "10.0.0.10", "etcd-0.example.com"},
		"etcd-1": {"localhost", "127.0.0.1", "::1", "10.0.0.11"},
	} {
		mf := f.EtcdMember(member)
		for _, file := range []string{mf.ServerCert, mf.PeerCert} {
			cert := readCert(t, file)
			if cert.Subject.CommonName != member {
				t.Errorf("%s: CN %q, want %q", file, cert.Subject.CommonName, member)
			}
			for _, host := range hosts {
				if _, err := cert.Verify(x509.VerifyOptions{DNSName: host, Roots: pool(t, f.EtcdCACert), KeyUsages: both}); err != nil {
					t.Errorf("%s for %s: %v", file, host, err)
				}
			}
			// The etcd CA is separate (CIS 2.7): nothing from the cluster
			// CA reaches etcd, and the members' certificates carry nothing
			// of the API server's.
			if _, err := cert.Verify(x509.VerifyOptions{Roots: pool(t, f.CACert), KeyUsages: both}); err == nil {
				t.Errorf("%s verifies against the cluster CA", file)
			}
			if _, err := cert.Verify(x509.VerifyOptions{DNSName: "gcp.example.com", Roots: pool(t, f.EtcdCACert)}); err == nil {
				t.Errorf("%s carries the API server's extra SANs", file)
			}
			if got := mode(t, filepath.Dir(file)); got != 0o700 {
				t.Errorf("%s: mode %o, want 700", filepath.Dir(file), got)
			}
		}
		if got := mode(t, mf.PeerKey); got != 0o600 {
			t.Errorf("%s: mode %o, want 600", mf.PeerKey, got)
		}
	}
	if _, err := readCert(t, f.AdminCert).Verify(x509.VerifyOptions{Roots: pool(t, f.EtcdCACert), KeyUsages: both}); err == nil {
		t.Error("the admin certificate verifies against the etcd CA")
	}

	// A member added later gets its certificates; nothing else changes.
	before := snapshot(t, f)
	ensure(t, pki.Options{Dir: f.Dir, ServingSANs: []string{"gcp.example.com"}, EtcdMembers: []pki.EtcdMember{{Name: "etcd-2"}}})
	if c := changed(before, snapshot(t, f)); len(c) > 0 {
		t.Errorf("adding a member changed %v", c)
	}
	readCert(t, f.EtcdMember("etcd-2").PeerCert)
}

func TestNoEtcdMembersNoEtcdFiles(t *testing.T) {
	t.Parallel()
	f, err := pki.Ensure(pki.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{f.EtcdCACert, f.EtcdClientCert, filepath.Join(f.Dir, "etcd")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it absent: gcp start's etcd has no TCP listener to certify", p, err)
		}
	}
}

func TestParseEtcdMember(t *testing.T) {
	t.Parallel()
	m, err := pki.ParseEtcdMember("etcd-0=10.0.0.10, node-0.example.com")
	if err != nil || m.Name != "etcd-0" || !slices.Equal(m.Hosts, []string{"10.0.0.10", "node-0.example.com"}) {
		t.Errorf("got %+v, %v", m, err)
	}
	for _, bad := range []string{"", "etcd-0", "=10.0.0.1", "Etcd_0=10.0.0.1", "a/b=10.0.0.1", "etcd-0=https://x"} {
		if _, err := pki.ParseEtcdMember(bad); err == nil {
			t.Errorf("ParseEtcdMember(%q): no error", bad)
		}
	}
	if _, err := pki.Ensure(pki.Options{Dir: t.TempDir(), EtcdMembers: []pki.EtcdMember{{Name: "a"}, {Name: "a"}}}); err == nil {
		t.Error("Ensure accepted a member twice")
	}
}
