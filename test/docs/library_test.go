// Package docs checks that the docs' code works as written.
package docs

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// repoRoot is the gcp module's root, from this package's directory.
var repoRoot = filepath.Join("..", "..")

// libraryDoc is a markdown page's code: the files its fenced blocks give,
// each block right after a line "`path`:", and the shell block right
// after the line runMarker.
type libraryDoc struct {
	files map[string]string
	run   string
}

// runMarker precedes the shell block the test runs.
const runMarker = "<!-- test/docs runs this block -->"

// fileLine is the line naming the file of the block after it.
var fileLine = regexp.MustCompile("^`([A-Za-z0-9_./-]+\\.go)`:$")

// parseDoc reads the files and the commands of the page at path.
func parseDoc(t *testing.T, path string) libraryDoc {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc := libraryDoc{files: map[string]string{}}
	var (
		pending string // the file or run block the next fence opens
		in      bool   // inside a fence
		target  string
		body    strings.Builder
	)
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case in && line == "```":
			in = false
			switch target {
			case "":
			case runMarker:
				doc.run = body.String()
			default:
				if _, dup := doc.files[target]; dup {
					t.Fatalf("%s gives %s twice", path, target)
				}
				doc.files[target] = body.String()
			}
		case in:
			body.WriteString(line + "\n")
		case strings.HasPrefix(line, "```"):
			in, target = true, pending
			body.Reset()
			pending = ""
		case line == runMarker:
			pending = runMarker
		case fileLine.MatchString(line):
			pending = fileLine.FindStringSubmatch(line)[1]
		case line != "":
			pending = ""
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return doc
}

// goModVersion returns the version gcp's go.mod requires of module.
func goModVersion(t *testing.T, module string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + ` (v\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("gcp's go.mod does not require %s", module)
	}
	return string(m[1])
}

// TestLibraryFromEmptyModule builds docs/library.md's "From an empty
// module" as a reader would: a new module requiring gcp (through a
// replace of this checkout, for `go get github.com/gcp-project/gcp`), the
// page's files, its codegen commands, then go vet and the page's own test,
// which starts a test server with the page's layer and sees its
// controller act. A block that no longer compiles, a command that fails
// or pins a version gcp does not use, fails the test.
func TestLibraryFromEmptyModule(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and tests a module of its own (about a minute)")
	}
	doc := parseDoc(t, filepath.Join(repoRoot, "docs", "library.md"))
	for _, want := range []string{"apis/v1/types.go", "gadgets/registry.go", "gadgets/controller.go", "gadgets/layer.go", "gadgets/gadgets_test.go", "main.go"} {
		if _, ok := doc.files[want]; !ok {
			t.Errorf("library.md gives no %s", want)
		}
	}
	if doc.run == "" {
		t.Errorf("library.md has no block after %q", runMarker)
	}
	// The generators' pins are gcp's versions.
	for _, want := range []string{
		"k8s.io/code-generator/cmd/deepcopy-gen@" + goModVersion(t, "k8s.io/apimachinery"),
		"k8s.io/kube-openapi/cmd/openapi-gen@" + goModVersion(t, "k8s.io/kube-openapi"),
	} {
		if !strings.Contains(doc.run, want) {
			t.Errorf("library.md's commands do not get %s", want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	proxy := os.Getenv("GOPROXY")
	if proxy == "" {
		proxy = "https://proxy.golang.org,direct"
	}
	env := append(os.Environ(),
		// Modules come from the local cache first (offline CI), the usual
		// proxy otherwise; the cache's were checked when downloaded.
		"GOPROXY=file://"+filepath.Join(strings.TrimSpace(string(cache)), "cache", "download")+","+proxy,
		"GOSUMDB=off",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	)
	run := func(name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	run("go", "mod", "init", "example.dev/gadgets")
	run("go", "mod", "edit", "-require=github.com/gcp-project/gcp@v0.0.0-00010101000000-000000000000", "-replace=github.com/gcp-project/gcp="+root)
	for path, content := range doc.files {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("bash", "-euo", "pipefail", "-c", doc.run)
	if out := run("gofmt", "-l", "."); out != "" {
		t.Errorf("library.md's files are not gofmt'd:\n%s", out)
	}
	run("go", "vet", "./...")
	run("go", "test", "-count=1", "./...")
}
