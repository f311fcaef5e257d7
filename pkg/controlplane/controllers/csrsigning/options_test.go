package csrsigning

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// TestFlags: kube-controller-manager's --cluster-signing-* flags, their
// rules, and which CA the signer gets from them.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args               []string
		wantErr            string
		wantCert, wantKey  string
		wantDurationInFlag time.Duration
	}{
		{args: nil, wantDurationInFlag: 365 * 24 * time.Hour},
		{args: []string{"--cluster-signing-cert-file=c", "--cluster-signing-key-file=k", "--cluster-signing-duration=1h"},
			wantCert: "c", wantKey: "k", wantDurationInFlag: time.Hour},
		{args: []string{"--cluster-signing-kube-apiserver-client-cert-file=c2", "--cluster-signing-kube-apiserver-client-key-file=k2"},
			wantCert: "c2", wantKey: "k2", wantDurationInFlag: 365 * 24 * time.Hour},
		{args: []string{"--cluster-signing-cert-file=c"}, wantErr: `"cluster-signing": cannot specify cert without key`},
		{args: []string{"--cluster-signing-kube-apiserver-client-key-file=k"}, wantErr: `"cluster-signing-kube-apiserver-client": cannot specify key without cert`},
		{args: []string{"--cluster-signing-cert-file=c", "--cluster-signing-key-file=k", "--cluster-signing-kube-apiserver-client-cert-file=c2", "--cluster-signing-kube-apiserver-client-key-file=k2"},
			wantErr: "cannot specify --cluster-signing-{cert,key}-file and other --cluster-signing-*-file flags at the same time"},
		{args: []string{"--cluster-signing-duration=0s"}, wantErr: "--cluster-signing-duration must be positive, got 0s"},
	} {
		o := NewOptions()
		fss := cliflag.NamedFlagSets{}
		o.AddFlags(&fss)
		if err := fss.FlagSet("csrsigning controller").Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		errs := o.Validate()
		if tc.wantErr != "" {
			if len(errs) != 1 || errs[0].Error() != tc.wantErr {
				t.Errorf("%v: errors %v, want %q", tc.args, errs, tc.wantErr)
			}
			continue
		}
		if len(errs) > 0 {
			t.Errorf("%v: %v", tc.args, errs)
		}
		cert, key := o.KubeAPIServerClientFiles()
		if cert != tc.wantCert || key != tc.wantKey || o.Duration != tc.wantDurationInFlag {
			t.Errorf("%v: CA %q %q, duration %v", tc.args, cert, key, o.Duration)
		}
	}
}

// writeKubeconfig writes a kubeconfig Options.Config can read, of a
// server nothing dials.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// TestFlagsReachTheController: `gcp controllers --cluster-signing-*`
// arrive in the Config as the signer's own options, which the manager puts
// in the signer's Context only.
func TestFlagsReachTheController(t *testing.T) {
	kubeconfig := writeKubeconfig(t)
	o := controllers.NewOptions([]controllers.Descriptor{Descriptor()})
	fss := cliflag.NamedFlagSets{}
	o.AddFlags(&fss)
	fs := pflag.NewFlagSet("gcp controllers", pflag.ContinueOnError)
	for _, f := range fss.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--kubeconfig", kubeconfig, "--secure-port=0",
		"--cluster-signing-cert-file=/ca.crt", "--cluster-signing-key-file=/ca.key", "--cluster-signing-duration=720h"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	want := Options{ClusterSigningCertFile: "/ca.crt", ClusterSigningKeyFile: "/ca.key", Duration: 720 * time.Hour}
	if got, ok := cfg.ControllerOptions[Name].(*Options); !ok || *got != want {
		t.Errorf("config has %#v, want %+v", cfg.ControllerOptions[Name], want)
	}
}

// TestClusterSigningCA: the manager's ClusterSigningCA (`gcp start`'s
// cluster CA) reaches the signer's options as the cluster-wide pair, with
// no import of this package by the caller.
func TestClusterSigningCA(t *testing.T) {
	o := controllers.NewOptions([]controllers.Descriptor{Descriptor()})
	o.Kubeconfig = writeKubeconfig(t)
	o.SecureServing.BindPort = 0
	o.ClusterSigningCA = controllers.CAFiles{CertFile: "/ca.crt", KeyFile: "/ca.key"}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	want := Options{ClusterSigningCertFile: "/ca.crt", ClusterSigningKeyFile: "/ca.key", Duration: DefaultClusterSigningDuration}
	if got, ok := cfg.ControllerOptions[Name].(*Options); !ok || *got != want {
		t.Errorf("config has %#v, want %+v", cfg.ControllerOptions[Name], want)
	}
}
