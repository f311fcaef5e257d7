// Package translations loads kubectl's message catalogs only in a process
// that runs `gcp kubectl`.
//
// kubectl's commands translate their help texts in package-level
// variables, so the first of them to initialise loads and parses a
// catalog (for the language in LC_ALL, LC_MESSAGES or LANG, English by
// default) in every process of the binary: 4.4 MB allocated and 16 ms
// before main (GODEBUG=inittrace=1), in `gcp start` and the other servers too, which never show
// kubectl's help. kubectl offers a hook for this,
// i18n.SetLoadTranslationsFunc, to be set in an init function that runs
// before any package translates. This package sets it: in a process that
// does not run kubectl (neither its first argument "kubectl" nor its file
// name kubectl or <product>-kubectl), kubectl's strings stay untranslated
// (English, as written in its source); `gcp kubectl` loads the catalogs
// as kubectl does.
//
// commands/multicall imports it, so every binary built on it has it. Go
// initialises packages in the order of their import paths among those
// whose imports are done, and
// this one imports only the i18n package, so it runs before every
// k8s.io/kubectl package that translates.
package translations

import (
	"os"
	"path/filepath"
	"strings"

	"k8s.io/kubectl/pkg/util/i18n"
)

// Skipped says whether this process left kubectl's catalogs unloaded.
var Skipped bool

func init() {
	if runsKubectl(os.Args) {
		return
	}
	// The error says a package translated before this init ran; then the
	// catalog is loaded already and there is nothing left to save.
	if err := i18n.SetLoadTranslationsFunc(func() error { return nil }); err == nil {
		Skipped = true
	}
}

// runsKubectl says whether a process with these arguments runs kubectl:
// `<product> kubectl ...`, or the binary called by a name that runs it
// (kubectl, <product>-kubectl; commands/multicall dispatches on them).
func runsKubectl(args []string) bool {
	if len(args) == 0 {
		return false
	}
	base := filepath.Base(args[0])
	return base == "kubectl" || strings.HasSuffix(base, "-kubectl") || len(args) > 1 && args[1] == "kubectl"
}
