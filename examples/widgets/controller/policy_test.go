package controller

import "testing"

func TestDescriptorCarriesItsRBAC(t *testing.T) {
	d := Descriptor()
	if d.ServiceAccount != ServiceAccount || len(d.Rules) != 3 {
		t.Fatalf("descriptor runs as %q with %d rules, want %s with 3", d.ServiceAccount, len(d.Rules), ServiceAccount)
	}
}
