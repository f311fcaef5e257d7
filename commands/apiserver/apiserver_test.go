package apiserver

import (
	"testing"

	cliflag "k8s.io/component-base/cli/flag"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/test/clidefaults"
)

// TestCLIDefaultsAreTheLibrarys: `gcp apiserver` with no flags configures
// the API server a library caller gets from options.NewOptions, field for
// field (with the stack's admission plugins, which apiserver.NewConfig
// adds): registering a flag sets no default of its own.
func TestCLIDefaultsAreTheLibrarys(t *testing.T) {
	comp, err := layering.Generic().Compose()
	if err != nil {
		t.Fatal(err)
	}
	cli := NewOptions(comp)
	fss := &cliflag.NamedFlagSets{}
	cli.AddFlags(fss)
	library := options.NewOptions()
	library.AddAdmissionPlugins(comp.AdmissionPlugins)
	clidefaults.Compare(t, fss, library, cli)
}
