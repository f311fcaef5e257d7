package main

import (
	"testing"

	"github.com/gcp-project/gcp/commands/kubectl/translations"
)

// TestKubectlCatalogsWaitForKubectl checks that the translations package
// initialises before every kubectl package that translates in this
// binary's import graph: otherwise a catalog was loaded at start-up
// already, in a process (this test's) that is not `gcp kubectl`. The e2e
// kubectl workflow checks that `gcp kubectl` still translates.
func TestKubectlCatalogsWaitForKubectl(t *testing.T) {
	if !translations.Skipped {
		t.Fatal("kubectl's message catalog was loaded before commands/kubectl/translations' init ran: some package translates earlier")
	}
}
