package version

import (
	"strings"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/util/compatibility"
)

// CheckVersionFlags checks the kube component's --emulated-version and
// --min-compatibility-version in fs as k8s.io/component-base's registry
// validates them, on a copy of the binary's effective version. The
// registry validates only after it has applied them to the feature gates,
// which logs a warning for every gate queried before (upstream's option
// constructors query some while they build defaults), so a version out of
// range got two lines; checked first, it gets one. Values the registry
// cannot parse, or of other components, are left for it to refuse.
func CheckVersionFlags(fs *pflag.FlagSet) error {
	emulated, minCompat := flagVersion(fs, "emulated-version"), flagVersion(fs, "min-compatibility-version")
	if emulated == nil && minCompat == nil {
		return nil
	}
	effective := compatibility.DefaultBuildEffectiveVersion()
	if emulated != nil {
		effective.SetEmulationVersion(emulated)
	}
	if minCompat != nil {
		effective.SetMinCompatibilityVersion(minCompat)
	}
	return utilerrors.NewAggregate(effective.Validate())
}

// flagVersion is the kube component's version in the flag name of fs
// ("1.36" or "kube=1.36"), nil if it has none or it does not parse.
func flagVersion(fs *pflag.FlagSet, name string) *utilversion.Version {
	f := fs.Lookup(name)
	if f == nil {
		return nil
	}
	values, ok := f.Value.(pflag.SliceValue)
	if !ok {
		return nil
	}
	for _, v := range values.GetSlice() {
		component, ver := "kube", v
		if c, rest, found := strings.Cut(v, "="); found {
			component, ver = strings.TrimSpace(c), strings.TrimSpace(rest)
		}
		if component != "kube" {
			continue
		}
		parsed, err := utilversion.Parse(ver)
		if err != nil {
			return nil
		}
		return parsed
	}
	return nil
}
