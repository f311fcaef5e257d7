package start

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/layering"
)

// TestCLIDefaultsAreTheLibrarys: `gcp start` with no flags configures the
// control plane a library caller gets from allinone.NewOptions, field for
// field (with the stack's admission plugins, which allinone.Start adds):
// registering a flag sets no default of its own.
func TestCLIDefaultsAreTheLibrarys(t *testing.T) {
	comp, err := layering.Generic().Compose()
	if err != nil {
		t.Fatal(err)
	}
	cli := NewOptions(comp)
	fss := &cliflag.NamedFlagSets{}
	AddFlags(cli, "gcp", comp, fss)
	for _, fs := range fss.FlagSets {
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
	}
	library := allinone.NewOptions()
	library.APIServer.AddAdmissionPlugins(comp.AdmissionPlugins)
	// Functions (admission plugin factories, the feature gates' hooks)
	// compare by what they are, not by identity.
	ignoreFuncs := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type().Kind() == reflect.Func }, cmp.Ignore())
	exportAll := cmp.Exporter(func(reflect.Type) bool { return true })
	if diff := cmp.Diff(library, cli, ignoreFuncs, exportAll); diff != "" {
		t.Errorf("gcp start's defaults differ from allinone.NewOptions (-library +cli):\n%s", diff)
	}
}

// TestControllersFlag: `gcp start --controllers` selects the controllers
// allinone.Options.Controllers runs, with the help of `gcp controllers
// --controllers`.
func TestControllersFlag(t *testing.T) {
	comp, err := layering.Generic().Compose()
	if err != nil {
		t.Fatal(err)
	}
	o := NewOptions(comp)
	fss := &cliflag.NamedFlagSets{}
	AddFlags(o, "gcp", comp, fss)
	fs := fss.FlagSet("controllers")
	if err := fs.Parse([]string{"--controllers=*,-garbage-collector-controller"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"*", "-garbage-collector-controller"}; !reflect.DeepEqual(o.Controllers, want) {
		t.Errorf("Controllers = %q, want %q", o.Controllers, want)
	}
	theirs := cliflag.NamedFlagSets{}
	controllers.NewOptions(comp.Controllers).AddFlags(&theirs)
	want := theirs.FlagSet("generic").Lookup("controllers")
	if got := fs.Lookup("controllers"); got.Usage != want.Usage || got.DefValue != want.DefValue {
		t.Errorf("--controllers is %q (default %s), want %q (default %s)", got.Usage, got.DefValue, want.Usage, want.DefValue)
	}
}
