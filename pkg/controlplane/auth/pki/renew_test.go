package pki_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

func TestInspectFindsEverythingAndWhatIsWrong(t *testing.T) {
	t.Parallel()
	f := ensure(t, pki.Options{Dir: t.TempDir(), EtcdMembers: []pki.EtcdMember{{Name: "etcd-0"}, {Name: "etcd-1"}}})
	now := time.Now()
	statuses, err := pki.Inspect(f.Dir, now)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range statuses {
		names = append(names, st.Name)
		if st.Problem != "" {
			t.Errorf("%s: %s", st.Name, st.Problem)
		}
	}
	want := []string{"ca", "front-proxy-ca", "etcd/ca", "apiserver", "admin", "controllers", "front-proxy-client",
		"apiserver-etcd-client", "etcd/etcd-0/server", "etcd/etcd-0/peer", "etcd/etcd-1/server", "etcd/etcd-1/peer"}
	if !slices.Equal(names, want) {
		t.Errorf("Inspect lists %v, want %v", names, want)
	}

	// Two years on, every leaf has expired and the CAs have not.
	later, err := pki.Inspect(f.Dir, now.Add(2*365*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range later {
		if wantExpired := st.Authority != ""; (st.Problem == "expired") != wantExpired {
			t.Errorf("in two years %s: problem %q", st.Name, st.Problem)
		}
	}

	// A certificate from another CA is named as such.
	other := ensure(t, pki.Options{Dir: t.TempDir()})
	copyFile(t, other.AdminCert, f.AdminCert)
	copyFile(t, other.AdminKey, f.AdminKey)
	statuses, _ = pki.Inspect(f.Dir, now)
	for _, st := range statuses {
		if st.Name == "admin" && st.Problem != "not signed by ca" {
			t.Errorf("admin from another CA: problem %q", st.Problem)
		}
	}
}

func TestRenewKeepsKeysAndCAs(t *testing.T) {
	t.Parallel()
	f := ensure(t, pki.Options{Dir: t.TempDir(), ServingSANs: []string{"gcp.example.com"}})
	before := snapshot(t, f)
	oldServing := readCert(t, f.ServingCert)

	later := time.Now().Add(200 * 24 * time.Hour)
	renewed, _, err := pki.Renew(f.Dir, nil, later)
	if err != nil {
		t.Fatal(err)
	}
	if len(renewed) != 7 {
		t.Errorf("renewed %v, want the seven leaves", renewed)
	}
	after := snapshot(t, f)
	for _, c := range changed(before, after) {
		if !strings.HasSuffix(c, ".crt") || strings.Contains(c, "ca.crt") {
			t.Errorf("Renew changed %s: only leaf certificates may change", c)
		}
	}
	serving := readCert(t, f.ServingCert)
	if !serving.NotAfter.After(oldServing.NotAfter) {
		t.Errorf("renewed serving cert expires %v, not after %v", serving.NotAfter, oldServing.NotAfter)
	}
	if !slices.Equal(serving.DNSNames, oldServing.DNSNames) || serving.Subject.CommonName != oldServing.Subject.CommonName {
		t.Errorf("renewed serving cert says %v %q, had %v %q", serving.DNSNames, serving.Subject.CommonName, oldServing.DNSNames, oldServing.Subject.CommonName)
	}
	if !bytes.Equal(before[f.ServingKey], after[f.ServingKey]) {
		t.Error("Renew replaced the serving key")
	}

	// One by name; an unknown name changes nothing.
	before = after
	if got, _, err := pki.Renew(f.Dir, []string{"admin"}, time.Now()); err != nil || !slices.Equal(got, []string{"admin"}) {
		t.Errorf("Renew(admin) = %v, %v", got, err)
	}
	if c := changed(before, snapshot(t, f)); !slices.Equal(c, []string{"admin.crt"}) {
		t.Errorf("Renew(admin) changed %v", c)
	}
	before = snapshot(t, f)
	if _, _, err := pki.Renew(f.Dir, []string{"nope"}, time.Now()); err == nil || !strings.Contains(err.Error(), "apiserver") {
		t.Errorf("Renew(nope) = %v, want an error listing the names", err)
	}
	if c := changed(before, snapshot(t, f)); len(c) > 0 {
		t.Errorf("failed Renew changed %v", c)
	}
}

// Without the etcd CA's key (kept on the etcd machines alone), the
// certificates the other CAs sign are renewed; those it signs are skipped
// when all are renewed, and refused, naming the key, when named.
func TestRenewWhatThePresentKeysCanSign(t *testing.T) {
	t.Parallel()
	f := ensure(t, pki.Options{Dir: t.TempDir(), EtcdMembers: []pki.EtcdMember{{Name: "etcd-0"}}})
	etcdCAKey := filepath.Join(f.Dir, "etcd", "ca.key")
	if err := os.Remove(etcdCAKey); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, f)
	if got, skipped, err := pki.Renew(f.Dir, []string{"apiserver"}, time.Now()); err != nil || !slices.Equal(got, []string{"apiserver"}) || len(skipped) > 0 {
		t.Errorf("Renew(apiserver) without the etcd CA's key = %v, %v, %v", got, skipped, err)
	}
	if c := changed(before, snapshot(t, f)); !slices.Equal(c, []string{"apiserver.crt"}) {
		t.Errorf("Renew(apiserver) changed %v", c)
	}

	renewed, skipped, err := pki.Renew(f.Dir, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range skipped {
		names = append(names, s.Name)
		if !strings.Contains(s.Why, etcdCAKey) {
			t.Errorf("skipped %s because %q, which does not name %s", s.Name, s.Why, etcdCAKey)
		}
	}
	if want := []string{"apiserver-etcd-client", "etcd/etcd-0/server", "etcd/etcd-0/peer"}; !slices.Equal(names, want) {
		t.Errorf("skipped %v, want %v", names, want)
	}
	if want := []string{"apiserver", "admin", "controllers", "front-proxy-client"}; !slices.Equal(renewed, want) {
		t.Errorf("renewed %v, want %v", renewed, want)
	}

	before = snapshot(t, f)
	_, _, err = pki.Renew(f.Dir, []string{"admin", "etcd/etcd-0/server"}, time.Now())
	if err == nil || !strings.Contains(err.Error(), "etcd/etcd-0/server") || !strings.Contains(err.Error(), etcdCAKey) {
		t.Errorf("Renew(admin, etcd/etcd-0/server) without the etcd CA's key: %v, want an error naming the certificate and the key", err)
	}
	if err != nil && strings.Contains(err.Error(), "remove") {
		t.Errorf("the error suggests removing something: %v", err)
	}
	if c := changed(before, snapshot(t, f)); !slices.Equal(c, []string{"admin.crt"}) {
		t.Errorf("Renew(admin, etcd/etcd-0/server) changed %v, want admin.crt alone", c)
	}
}

func TestKubeconfigsAndTheirServer(t *testing.T) {
	t.Parallel()
	f := ensure(t, pki.Options{Dir: t.TempDir()})
	dir := t.TempDir()
	ks := f.Kubeconfigs(dir)
	if len(ks) != 2 || filepath.Base(ks[0].Path) != pki.AdminKubeconfigName || filepath.Base(ks[1].Path) != pki.ControllersKubeconfigName {
		t.Fatalf("Kubeconfigs = %+v", ks)
	}
	if err := pki.WriteKubeconfig(ks[0].Path, "https://lb.example.com:6443", f.CACert, ks[0].CertFile, ks[0].KeyFile, "gcp"); err != nil {
		t.Fatal(err)
	}
	if server, err := pki.KubeconfigServer(ks[0].Path); err != nil || server != "https://lb.example.com:6443" {
		t.Errorf("KubeconfigServer = %q, %v", server, err)
	}
	if st := pki.InspectKubeconfig(ks[0].Path, time.Now()); st.Problem != "" || st.NotAfter.IsZero() {
		t.Errorf("InspectKubeconfig = %+v", st)
	}
	if err := os.WriteFile(ks[1].Path, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := pki.KubeconfigServer(ks[1].Path); err == nil {
		t.Error("KubeconfigServer of a kubeconfig without context: no error")
	}
}
