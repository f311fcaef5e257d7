// Package house checks rules about the shape of gcp's own code that no
// compiler or linter holds: how long a file or a function may grow. It
// is a package of its own, beside test/imports (the import graph, from
// go list), because it reads the source itself, with go/ast.
package house

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the gcp module's root, from this package's directory.
var repoRoot = filepath.Join("..", "..")

const (
	// maxFileLines is the most lines a hand-written Go file may have.
	maxFileLines = 450
	// maxFuncLines is the most lines a function (declared or literal) may
	// span, from its func keyword to its closing brace.
	maxFuncLines = 150
)

// roots are the directories of the module whose Go files are held to the
// limits; test/ (whole-system tests, their tables long by nature) and the
// examples are not.
var roots = []string{"cmd", "commands", "pkg", "internal", "hack"}

// generated says whether path is generated rather than written by hand:
// zz_generated* files, the OpenAPI definitions package, and any file that
// says it is generated, as the Go convention has it.
func generated(rel string, src []byte) bool {
	if strings.HasPrefix(filepath.Base(rel), "zz_generated") || strings.HasPrefix(rel, "pkg/controlplane/openapi/") {
		return true
	}
	for _, line := range strings.SplitN(string(src), "\n", 20) {
		if strings.HasPrefix(line, "// Code generated ") && strings.HasSuffix(line, " DO NOT EDIT.") {
			return true
		}
	}
	return false
}

// TestSizes fails on every hand-written Go file of the module over
// maxFileLines lines and every function over maxFuncLines, naming each.
func TestSizes(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	for _, root := range roots {
		err := filepath.WalkDir(filepath.Join(repoRoot, root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				// Another module (hack/tools/hydra, hack/bench/envtest) or test data.
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil || d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if generated(rel, src) {
				return nil
			}
			checked++
			for _, problem := range oversized(fset, rel, src) {
				t.Error(problem)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: is the walk looking in the right place?", checked)
	}
}

// oversized returns what in the file rel, whose source is src, is over
// the limits.
func oversized(fset *token.FileSet, rel string, src []byte) []string {
	var problems []string
	if n := strings.Count(string(src), "\n"); n > maxFileLines {
		problems = append(problems, fmt.Sprintf("%s: %d lines, more than %d: split it by job", rel, n, maxFileLines))
	}
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return append(problems, fmt.Sprintf("%s: %v", rel, err))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var name string
		switch fn := n.(type) {
		case *ast.FuncDecl:
			name = fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) > 0 {
				name = recvName(fn.Recv.List[0].Type) + "." + name
			}
		case *ast.FuncLit:
			name = "func literal"
		default:
			return true
		}
		start, end := fset.Position(n.Pos()), fset.Position(n.End())
		if lines := end.Line - start.Line + 1; lines > maxFuncLines {
			problems = append(problems, fmt.Sprintf("%s:%d: %s is %d lines, more than %d", rel, start.Line, name, lines, maxFuncLines))
		}
		return true
	})
	return problems
}

// recvName is the type a method's receiver names, without pointer or type
// parameters.
func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}
