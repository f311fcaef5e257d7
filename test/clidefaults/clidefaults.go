// Package clidefaults is for each command's test that its flags leave the
// library's defaults as they are (STYLE.md 15: defaults live once, in the
// options constructor; the CLI and a library caller get the same control
// plane).
package clidefaults

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/layering"
)

// Generic returns gcp's own stack composed, which the commands take their
// defaults from.
func Generic(t testing.TB) composition.Composition {
	t.Helper()
	comp, err := layering.Generic().Compose()
	if err != nil {
		t.Fatal(err)
	}
	return comp
}

// Compare has addFlags register cli's flags and parses no arguments into
// them, so that each flag has written its default into cli, and fails t,
// printing the difference, if cli then differs from library,
// the library constructor's options, in any field, unexported ones
// included. Functions (admission plugin factories, feature gates' hooks)
// compare by their type only: two constructors never return the same
// closure.
func Compare(t testing.TB, library, cli any, addFlags func(*cliflag.NamedFlagSets)) {
	t.Helper()
	fss := &cliflag.NamedFlagSets{}
	addFlags(fss)
	for _, fs := range fss.FlagSets {
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
	}
	ignoreFuncs := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type().Kind() == reflect.Func }, cmp.Ignore())
	exportAll := cmp.Exporter(func(reflect.Type) bool { return true })
	if diff := cmp.Diff(library, cli, ignoreFuncs, exportAll); diff != "" {
		t.Errorf("the command's defaults differ from the library's (-library +cli):\n%s", diff)
	}
}
