package testserver

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestNamespacePrefix: any test name gives a valid GenerateName, with
// room left for the random suffix.
func TestNamespacePrefix(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"TestA":                         "testa-",
		"TestA/sub_case#01":             "testa-sub-case-01-",
		"__Test__":                      "test-",
		"/":                             "test-",
		strings.Repeat("TestLong", 10):  strings.Repeat("testlong", 7)[:51] + "-",
		strings.Repeat("a", 50) + "/-b": strings.Repeat("a", 50) + "-",
	} {
		got := namespacePrefix(name)
		if got != want {
			t.Errorf("namespacePrefix(%q) = %q, want %q", name, got, want)
		}
		if errs := validation.IsDNS1123Label(got + "x1y2z"); len(errs) > 0 {
			t.Errorf("namespacePrefix(%q) = %q: not a namespace name with a suffix: %v", name, got, errs)
		}
	}
}
