package apiserver

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/common"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

// checkDefinitions fails when a kind of groups has no OpenAPI definition,
// or one of its definitions refers to a name none has, which
// k8s.io/apiserver would report only when installing the APIs.
func checkDefinitions(scheme *runtime.Scheme, groups []registry.APIGroup, definitions common.GetOpenAPIDefinitions) error {
	defined := definitions(func(path string) spec.Ref { return spec.MustCreateRef(path) })
	var missing, served []string
	for _, g := range groups {
		for _, gv := range scheme.PrioritizedVersionsForGroup(g.GroupName()) {
			for kind, t := range scheme.KnownTypes(gv) {
				if strings.HasSuffix(kind, "Options") || kind == "WatchEvent" {
					continue // meta/v1 types every version carries
				}
				name := openapiutil.GetCanonicalTypeName(reflect.New(t).Interface())
				served = append(served, name)
				if _, ok := defined[name]; !ok {
					missing = append(missing, fmt.Sprintf("%s (%s)", gv.WithKind(kind), name))
				}
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("no OpenAPI definition for %s: add the group's generated definitions to its layer (Layer.OpenAPIDefinitions)", strings.Join(missing, ", "))
	}
	return checkDependencies(defined, served)
}

// checkDependencies fails when a definition reachable from roots (the
// served kinds' names) refers to a name that no definition has, which
// kube-openapi's builder would report only while the server installs its
// APIs, after etcd has started, with advice that is wrong for this case
// ("add +k8s:openapi-gen=true"). The usual cause is a package missing
// from openapi-gen's inputs: openapi-gen names a type of another package
// canonically (io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta) only when
// it reads that package, and by Go path otherwise
// (k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta), a name nothing
// defines. The error names each missing definition, who refers to it,
// and the package to add.
func checkDependencies(defined map[string]common.OpenAPIDefinition, roots []string) error {
	missing := map[string][]string{} // missing name -> names referring to it
	seen := map[string]bool{}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		def, ok := defined[name]
		if !ok {
			continue // a root without a definition is checkDefinitions' to report
		}
		for _, dep := range def.Dependencies {
			if _, ok := defined[dep]; !ok {
				missing[dep] = append(missing[dep], name)
				continue
			}
			queue = append(queue, dep)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var problems []string
	packages := map[string]bool{}
	for _, dep := range slices.Sorted(maps.Keys(missing)) {
		referrers := slices.Compact(slices.Sorted(slices.Values(missing[dep])))
		problems = append(problems, fmt.Sprintf("%s (referred to by %s)", dep, strings.Join(referrers, ", ")))
		if pkg, ok := goPackage(dep); ok {
			packages[pkg] = true
		}
	}
	advice := "add the missing definitions to a layer's OpenAPIDefinitions"
	if len(packages) > 0 {
		pkgs := slices.Sorted(maps.Keys(packages))
		advice = fmt.Sprintf("these are Go paths, which openapi-gen writes for a type whose package it did not read: pass %s to openapi-gen as an input too, with --readonly-pkg, and generate again",
			strings.Join(pkgs, " and "))
	}
	return fmt.Errorf("OpenAPI definitions refer to %s, which no definition has: %s", strings.Join(problems, ", "), advice)
}

// goPackage returns the Go package of a definition named by Go path
// (k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta), rather than by a
// canonical model name (io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta).
func goPackage(name string) (string, bool) {
	slash := strings.LastIndex(name, "/")
	dot := strings.LastIndex(name, ".")
	if slash < 0 || dot < slash {
		return "", false
	}
	return name[:dot], true
}
