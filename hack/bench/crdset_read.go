package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// crdSet is one archive of hack/bench/crdsets: its CRDs, sorted by file
// name, the first --crd-limit of them.
type crdSet struct {
	name      string // the archive's name without .tar.xz
	files     int    // YAML files in the archive
	yamlBytes int64  // their size, of the CRDs taken
	crds      []*apiextensionsv1.CustomResourceDefinition
}

// readCRDSet reads the archive at path (a .tar.xz of YAML files, one CRD
// each) and decodes the first limit files by name (every one if limit is
// 0). No xz decoder is in gcp's module graph, so xz decompresses it.
func readCRDSet(path string, limit int) (*crdSet, error) {
	cmd := exec.Command("xz", "-dc", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("xz: %w", err)
	}
	set, readErr := readCRDTar(out, limit)
	_, _ = io.Copy(io.Discard, out) // let xz finish if the read stopped early
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("xz -dc %s: %v: %s", path, err, strings.TrimSpace(stderr.String()))
	}
	if readErr != nil {
		return nil, fmt.Errorf("%s: %w", path, readErr)
	}
	set.name = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".xz"), ".tar")
	return set, nil
}

// readCRDTar reads a tar stream of YAML files and decodes the
// CustomResourceDefinitions of the first limit of them by name (every
// one if limit is 0).
func readCRDTar(r io.Reader, limit int) (*crdSet, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(h.Name, "./")
		if h.Typeflag != tar.TypeReg || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	set := &crdSet{files: len(names)}
	if limit > 0 && limit < len(names) {
		names = names[:limit]
	}
	for _, name := range names {
		crds, err := decodeCRDs(files[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(crds) == 0 {
			return nil, fmt.Errorf("%s: no CustomResourceDefinition", name)
		}
		set.crds = append(set.crds, crds...)
		set.yamlBytes += int64(len(files[name]))
	}
	if len(set.crds) == 0 {
		return nil, errors.New("no CRDs")
	}
	return set, nil
}

// decodeCRDs decodes every CustomResourceDefinition of a YAML stream.
func decodeCRDs(b []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := dec.Decode(crd); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if crd.Kind == "CustomResourceDefinition" && crd.Name != "" {
			out = append(out, crd)
		}
	}
}

// storageVersion is the version a CRD's objects are stored in, or the
// first served one if that one is not served: the version the bench
// lists, watches and creates.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionVersion {
	var served *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Storage && v.Served {
			return v
		}
		if v.Served && served == nil {
			served = v
		}
	}
	return served
}

// storageGVR is the resource of a CRD's storage version.
func storageGVR(crd *apiextensionsv1.CustomResourceDefinition) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: storageVersion(crd).Name, Resource: crd.Spec.Names.Plural}
}

// servedResources are the group/version/resource keys discovery lists
// once every CRD of crds is served: one for each served version.
func servedResources(crds []*apiextensionsv1.CustomResourceDefinition) map[string]bool {
	keys := map[string]bool{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				keys[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Plural] = true
			}
		}
	}
	return keys
}

// spread picks k of n indexes, evenly spread and always the same: every
// one if k >= n.
func spread(n, k int) []int {
	if k > n {
		k = n
	}
	out := make([]int, k)
	for i := range out {
		out[i] = i * n / k
	}
	return out
}

// deepestPath is the longest path of property names in a schema, as
// kubectl explain takes it (an array's items are passed through; a
// map's values, which explain cannot name, are not): of equally long
// ones, the first in the properties' name order.
func deepestPath(s *apiextensionsv1.JSONSchemaProps) []string {
	if s == nil {
		return nil
	}
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
		return deepestPath(s.Items.Schema)
	}
	var best []string
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		if path := append([]string{name}, deepestPath(&p)...); len(path) > len(best) {
			best = path
		}
	}
	return best
}

// explainTarget is the CRD of a set with the deepest field, and that
// field's path: what `kubectl explain` of a deep field asks for.
type explainTarget struct {
	crd  *apiextensionsv1.CustomResourceDefinition
	path []string
}

// deepestField finds the explainTarget of crds: the deepest path of any
// storage version's schema, of equally deep ones the first CRD's.
func deepestField(crds []*apiextensionsv1.CustomResourceDefinition) explainTarget {
	var t explainTarget
	for _, crd := range crds {
		v := storageVersion(crd)
		if v == nil || v.Schema == nil {
			continue
		}
		if path := deepestPath(v.Schema.OpenAPIV3Schema); len(path) > len(t.path) {
			t = explainTarget{crd: crd, path: path}
		}
	}
	return t
}

// biggestGroup is the API group with the most CRDs of crds (of equally
// big ones the first by name) and the storage version most of them use.
func biggestGroup(crds []*apiextensionsv1.CustomResourceDefinition) (group, version string, n int) {
	count := map[string]int{}
	versions := map[string]map[string]int{}
	for _, crd := range crds {
		g := crd.Spec.Group
		count[g]++
		if versions[g] == nil {
			versions[g] = map[string]int{}
		}
		if v := storageVersion(crd); v != nil {
			versions[g][v.Name]++
		}
	}
	for _, g := range slices.Sorted(maps.Keys(count)) {
		if count[g] > n {
			group, n = g, count[g]
		}
	}
	most := 0
	for _, v := range slices.Sorted(maps.Keys(versions[group])) {
		if versions[group][v] > most {
			version, most = v, versions[group][v]
		}
	}
	return group, version, n
}
