package coldcrs

import (
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"
)

// deprecationWarnings are the warnings apiextensions-apiserver adds to
// every request to a deprecated version: the CRD's own, or one naming the
// newest served version that is not deprecated.
func deprecationWarnings(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) []string {
	if !v.Deprecated {
		return nil
	}
	if v.DeprecationWarning != nil {
		return []string{*v.DeprecationWarning}
	}
	msg := fmt.Sprintf("%s/%s %s is deprecated", crd.Spec.Group, v.Name, crd.Spec.Names.Kind)
	var newer []string
	for _, o := range crd.Spec.Versions {
		if o.Served && !o.Deprecated && version.CompareKubeAwareVersionStrings(v.Name, o.Name) < 0 {
			newer = append(newer, o.Name)
		}
	}
	if len(newer) == 0 {
		return []string{msg}
	}
	newest := slices.MaxFunc(newer, version.CompareKubeAwareVersionStrings)
	return []string{fmt.Sprintf("%s; use %s/%s %s", msg, crd.Spec.Group, newest, crd.Spec.Names.Kind)}
}
