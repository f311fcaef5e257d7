package rootcacertpublisher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// TestRootCAFile: --root-ca-file is the publisher's own flag; a missing
// file stops Config naming the flag, and a present one is what is
// published, ahead of the kubeconfig's CA.
func TestRootCAFile(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(bundle, []byte("bundle"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := func(rootCAFile string) (*controllers.Config, error) {
		o := controllers.NewOptions([]controllers.Descriptor{Descriptor()})
		fss := cliflag.NamedFlagSets{}
		o.AddFlags(&fss)
		fs := pflag.NewFlagSet("gcp controllers", pflag.ContinueOnError)
		for _, f := range fss.FlagSets {
			fs.AddFlagSet(f)
		}
		if err := fs.Parse([]string{"--kubeconfig", kubeconfig, "--secure-port=0", "--root-ca-file", rootCAFile}); err != nil {
			t.Fatal(err)
		}
		return o.Config()
	}
	if _, err := config(filepath.Join(dir, "missing")); err == nil || !strings.HasPrefix(err.Error(), "--root-ca-file: ") {
		t.Errorf("a missing --root-ca-file: got %v", err)
	}
	c, err := config(bundle)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := c.ControllerOptions[Name].(*Options)
	if !ok {
		t.Fatalf("the publisher's options are %#v", c.ControllerOptions[Name])
	}
	if got, err := o.bundle(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("kubeconfig")}}); err != nil || string(got) != "bundle" {
		t.Errorf("published %q, %v; want the file's", got, err)
	}
	if got, err := (&Options{}).bundle(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: bundle}}); err != nil || string(got) != "bundle" {
		t.Errorf("without --root-ca-file, published %q, %v; want the kubeconfig's CA file", got, err)
	}
}
