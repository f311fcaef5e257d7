package pki

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand("gcp")
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestInitCheckRenew(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "pki")
	out, err := run(t, "init", "--dir", dir, "--server", "https://lb.example.com:6443", "--apiserver-san", "lb.example.com",
		"--etcd-member", "etcd-0=10.0.0.10", "--etcd-member", "etcd-1=10.0.0.11")
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	for _, want := range []string{"wrote " + filepath.Join(base, "admin.kubeconfig") + " for https://lb.example.com:6443",
		"etcd/etcd-1/peer", "admin.kubeconfig", "apiserver-etcd-client"} {
		if !strings.Contains(out, want) {
			t.Errorf("init output lacks %q:\n%s", want, out)
		}
	}
	key, err := os.ReadFile(filepath.Join(dir, "etcd", "etcd-0", "peer.key"))
	if err != nil {
		t.Fatal(err)
	}

	// Again: every key and kubeconfig is kept.
	out, err = run(t, "init", "--dir", dir, "--etcd-member", "etcd-0=10.0.0.10")
	if err != nil || !strings.Contains(out, "kept "+filepath.Join(base, "admin.kubeconfig")) {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "etcd", "etcd-0", "peer.key")); !bytes.Equal(key, again) {
		t.Error("second init replaced a key")
	}
	if kubeconfig, _ := os.ReadFile(filepath.Join(base, "admin.kubeconfig")); !strings.Contains(string(kubeconfig), "https://lb.example.com:6443") {
		t.Error("second init without --server changed the kubeconfig's server")
	}

	// Again with another --server: the kubeconfigs are rewritten for it,
	// with the client certificates they had.
	adminCert, _ := os.ReadFile(filepath.Join(dir, "admin.crt"))
	out, err = run(t, "init", "--dir", dir, "--server", "https://lb2.example.com:6443", "--etcd-member", "etcd-0=10.0.0.10")
	if err != nil || !strings.Contains(out, "rewrote "+filepath.Join(base, "controllers.kubeconfig")+" for https://lb2.example.com:6443 (was https://lb.example.com:6443)") {
		t.Fatalf("init with a new --server: %v\n%s", err, out)
	}
	kubeconfig, _ := os.ReadFile(filepath.Join(base, "admin.kubeconfig"))
	if !strings.Contains(string(kubeconfig), "https://lb2.example.com:6443") || strings.Contains(string(kubeconfig), "https://lb.example.com:6443") {
		t.Errorf("admin.kubeconfig after init with a new --server:\n%s", kubeconfig)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "admin.crt")); !bytes.Equal(adminCert, again) {
		t.Error("init with a new --server replaced the admin certificate")
	}
	if out, err = run(t, "init", "--dir", dir, "--server", "https://lb2.example.com:6443", "--etcd-member", "etcd-0=10.0.0.10"); err != nil ||
		!strings.Contains(out, "kept "+filepath.Join(base, "admin.kubeconfig")+" for https://lb2.example.com:6443") {
		t.Fatalf("init with the same --server: %v\n%s", err, out)
	}

	if out, err := run(t, "check", "--dir", dir); err != nil || strings.Count(out, " ok\n") != 14 {
		t.Errorf("check: %v, want 14 certificates ok:\n%s", err, out)
	}
	out, err = run(t, "renew", "--dir", dir, "all")
	if err != nil || !strings.Contains(out, "renewed etcd/etcd-1/server") || !strings.Contains(out, "rewrote "+filepath.Join(base, "admin.kubeconfig")) {
		t.Fatalf("renew: %v\n%s", err, out)
	}
	kubeconfig, _ = os.ReadFile(filepath.Join(base, "admin.kubeconfig"))
	if !strings.Contains(string(kubeconfig), "https://lb2.example.com:6443") {
		t.Error("renew changed the kubeconfig's server")
	}

	// A certificate from elsewhere makes check fail.
	other := filepath.Join(t.TempDir(), "pki")
	if _, err := run(t, "init", "--dir", other); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(other, "admin.crt"))
	if err := os.WriteFile(filepath.Join(dir, "admin.crt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "check", "--dir", dir); err == nil || !strings.Contains(out, "not signed by ca") {
		t.Errorf("check with a foreign certificate: %v\n%s", err, out)
	}
}

func TestBadInputCreatesNothing(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"server":        {"--server", "http://127.0.0.1:6443"},
		"member":        {"--etcd-member", "etcd-0"},
		"member name":   {"--etcd-member", "Etcd_0=10.0.0.1"},
		"member host":   {"--etcd-member", "etcd-0=https://10.0.0.1"},
		"duplicate":     {"--etcd-member", "a=10.0.0.1", "--etcd-member", "a=10.0.0.2"},
		"apiserver san": {"--apiserver-san", "not a name"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			dir := filepath.Join(base, "pki")
			_, err := run(t, append([]string{"init", "--dir", dir}, args...)...)
			if err == nil || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line", err)
			}
			if entries, _ := os.ReadDir(base); len(entries) > 0 {
				t.Errorf("%s left %d entries behind", name, len(entries))
			}
		})
	}
	if _, err := run(t, "check", "--dir", filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "gcp pki init") {
		t.Errorf("check of a missing dir: %v", err)
	}
	if _, err := run(t, "renew", "--dir", filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("renew of a missing dir: no error")
	}
}
