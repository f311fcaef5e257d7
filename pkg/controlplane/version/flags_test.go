package version

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	basecompatibility "k8s.io/component-base/compatibility"
)

func TestCheckVersionFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // in the error; empty: no error
	}{
		{args: nil},
		{args: []string{"--emulated-version", "1.36"}},
		{args: []string{"--emulated-version", "kube=1.36", "--min-compatibility-version", "1.35"}},
		{args: []string{"--emulated-version", "1.2"}, want: "emulation version 1.2 is not between"},
		{args: []string{"--emulated-version", "kube=1.99"}, want: "emulation version 1.99 is not between"},
		{args: []string{"--emulated-version", "1.36", "--min-compatibility-version", "1.37"}, want: "minCompatibilityVersion version 1.37"},
		// Left for the registry, which refuses them in one line of its own.
		{args: []string{"--emulated-version", "not-a-version"}},
		{args: []string{"--emulated-version", "wardle=1.2"}},
	} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		basecompatibility.NewComponentGlobalsRegistry().AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		err := CheckVersionFlags(fs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v, want no error", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}
