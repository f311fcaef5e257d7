package apiserver

import (
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/test/clidefaults"
)

// TestCLIDefaultsAreTheLibrarys: `gcp apiserver` with no flags configures
// the API server a library caller gets from options.NewOptions, field for
// field (with the stack's admission plugins, which apiserver.NewConfig
// adds): registering a flag sets no default of its own.
func TestCLIDefaultsAreTheLibrarys(t *testing.T) {
	comp := clidefaults.Generic(t)
	cli := NewOptions(comp)
	library := options.NewOptions()
	library.AddAdmissionPlugins(comp.AdmissionPlugins)
	clidefaults.Compare(t, library, cli, cli.AddFlags)
}
