// Package imports checks the import rules of STYLE.md with `go list`: no
// k8s.io/kubernetes anywhere, and dependencies only in the allowed
// direction (cmd -> commands/multicall -> commands -> pkg/layering ->
// pkg/controlplane; main also picks the stack from pkg/layering;
// pkg/testserver sits beside the commands, over pkg/layering).
package imports

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/gcp-project/gcp"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	readSources(t)
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// readSources reads every Go file and go.mod of the module. `go test`
// caches a passing result until a file the test opened changes; `go list`
// runs in a child process whose reads it does not see, so without this a
// new import would not run the test again and the cached pass would hide it.
// It returns the module's directory.
func readSources(t *testing.T) string {
	t.Helper()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	dir := strings.TrimSpace(string(root))
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || d.Name() == "go.mod") {
			_, err = os.ReadFile(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestNoKubernetesImport(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, d := range p.Deps {
			if d == "k8s.io/kubernetes" || strings.HasPrefix(d, "k8s.io/kubernetes/") {
				t.Errorf("%s depends on %s", p.ImportPath, d)
			}
		}
	}
}

// rule says whether package from may import ours (a package of this module).
func allowed(from, to string) bool {
	rel := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }
	f, d := rel(from), rel(to)
	switch {
	case strings.HasPrefix(f, "cmd/"):
		// main picks the stack the commands serve.
		return strings.HasPrefix(d, "commands/") || strings.HasPrefix(d, "pkg/layering")
	case strings.HasPrefix(f, "commands/multicall"):
		// The binary's root: it puts every command under it, so that a
		// product's main (gcp's, a consumer's) is one line.
		return strings.HasPrefix(d, "commands/") || strings.HasPrefix(d, "pkg/") || strings.HasPrefix(d, "internal/")
	case strings.HasPrefix(f, "commands/"):
		if strings.HasPrefix(d, "commands/") {
			// A command's own subpackages only: what two commands
			// share (options, defaults) lives in pkg/ below both.
			return strings.SplitN(f, "/", 3)[1] == strings.SplitN(d, "/", 3)[1]
		}
		return strings.HasPrefix(d, "pkg/") || strings.HasPrefix(d, "internal/")
	case strings.HasPrefix(f, "pkg/testserver"):
		return strings.HasPrefix(d, "pkg/controlplane") || strings.HasPrefix(d, "pkg/layering")
	case strings.HasPrefix(f, "pkg/layering"):
		return strings.HasPrefix(d, "pkg/controlplane") || strings.HasPrefix(d, "pkg/layering")
	case strings.HasPrefix(f, "pkg/controlplane"):
		return strings.HasPrefix(d, "pkg/controlplane")
	case strings.HasPrefix(f, "internal/gcheadroom"):
		// A process's GC setting: the standard library only.
		return false
	}
	return true // tests and tools
}

func TestImportDirection(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/") && !allowed(p.ImportPath, imp) {
				t.Errorf("%s must not import %s (see STYLE.md import rules)", p.ImportPath, imp)
			}
			if strings.HasPrefix(p.ImportPath, module+"/pkg/") && strings.HasPrefix(imp, "github.com/spf13/cobra") {
				t.Errorf("%s must not import cobra: pkg/ works without a CLI", p.ImportPath)
			}
		}
	}
}

// TestOnlyEtcdPackageImportsEtcdServer keeps the etcd server out of the
// apiserver and the library's other packages.
func TestOnlyEtcdPackageImportsEtcdServer(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "go.etcd.io/etcd/server/") && p.ImportPath != module+"/pkg/controlplane/etcd" {
				t.Errorf("%s imports %s; only pkg/controlplane/etcd may", p.ImportPath, imp)
			}
		}
	}
}

func TestRuleTable(t *testing.T) {
	cases := []struct {
		from, to string
		ok       bool
	}{
		{"cmd/gcp", "commands/start", true},
		{"cmd/gcp", "pkg/layering", true},
		{"cmd/gcp", "pkg/controlplane/apiserver", false},
		{"pkg/testserver", "pkg/layering", true},
		{"pkg/testserver", "commands/start", false},
		{"pkg/layering", "pkg/testserver", false},
		{"commands/apiserver", "commands/etcd", false},
		{"commands/start", "commands/etcd", false},
		{"commands/manifests", "commands/apiserver", false},
		{"commands/kubectl", "commands/kubectl/translations", true},
		{"commands/multicall", "commands/apiserver", true},
		{"commands/apiserver", "commands/multicall", false},
		{"pkg/controlplane/apiserver", "pkg/layering", false},
		{"pkg/layering", "pkg/controlplane/registry", true},
		{"pkg/controlplane/apiserver", "commands/start", false},
		{"internal/gcheadroom", "pkg/controlplane/etcd", false},
		{"commands/start", "internal/gcheadroom", true},
	}
	for _, c := range cases {
		if got := allowed(module+"/"+c.from, module+"/"+c.to); got != c.ok {
			t.Errorf("allowed(%s -> %s) = %v, want %v", c.from, c.to, got, c.ok)
		}
	}
}

// TestShippedBinaryLinksNoGoPlugins builds the dependency list of cmd/gcp
// with the tags of hack/build.sh and fails if the standard library's plugin
// package is in it: linking it makes the linker keep every method of every
// reachable type and export every symbol (see hack/build.sh).
func TestShippedBinaryLinksNoGoPlugins(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(readSources(t), "hack", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tags := ""
	for _, line := range strings.Split(string(script), "\n") {
		if v, ok := strings.CutPrefix(line, "tags="); ok {
			tags = v
		}
	}
	if tags == "" {
		t.Fatal("hack/build.sh sets no tags= line")
	}
	out, err := exec.Command("go", "list", "-deps", "-tags", tags, module+"/cmd/gcp").Output()
	if err != nil {
		t.Fatalf("go list -deps -tags %s: %v", tags, err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "plugin" {
			t.Errorf("cmd/gcp built with -tags %s links package plugin; find who imports it with go list -deps -f '{{.ImportPath}} {{.Imports}}'", tags)
		}
	}
}
