package start

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
)

// TestCLIDefaultsAreTheLibrarys: `gcp start` with no flags configures the
// control plane a library caller gets from allinone.NewOptions, field for
// field: registering a flag sets no default of its own.
func TestCLIDefaultsAreTheLibrarys(t *testing.T) {
	cli := NewOptions()
	fss := &cliflag.NamedFlagSets{}
	AddFlags(cli, fss)
	for _, fs := range fss.FlagSets {
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
	}
	library := allinone.NewOptions()
	// Functions (admission plugin factories, the feature gates' hooks)
	// compare by what they are, not by identity.
	ignoreFuncs := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type().Kind() == reflect.Func }, cmp.Ignore())
	exportAll := cmp.Exporter(func(reflect.Type) bool { return true })
	if diff := cmp.Diff(library, cli, ignoreFuncs, exportAll); diff != "" {
		t.Errorf("gcp start's defaults differ from allinone.NewOptions (-library +cli):\n%s", diff)
	}
}
