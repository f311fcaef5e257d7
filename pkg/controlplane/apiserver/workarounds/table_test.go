package workarounds

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFilesMatchTheTable: the package's files and the rows of
// docs/architecture.md's "Workarounds for upstream" match one to one, so
// that a workaround cannot be added without its row (the upstream code, the
// issue, the test to run when upstream fixes it), nor a row outlive its
// file. A row whose seam is outside this package names its file's path
// under pkg/controlplane, which must exist. workarounds.go, the storage
// wrapping the rows share, is the one file that is not a row.
func TestFilesMatchTheTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows(t, string(doc), "## Workarounds for upstream")
	if len(rows) == 0 {
		t.Fatal(`docs/architecture.md: no table under "## Workarounds for upstream"`)
	}
	firstCode := regexp.MustCompile("`([^`]+)`")
	named := map[string]int{} // a file of this package -> the rows naming it
	for _, row := range rows {
		m := firstCode.FindStringSubmatch(row)
		if m == nil {
			t.Errorf("row names no file: %s", row)
			continue
		}
		where := m[1]
		if strings.Contains(where, "/") {
			if _, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(where))); err != nil {
				t.Errorf("row names %s, which is not under pkg/controlplane: %v", where, err)
			}
			continue
		}
		if !strings.HasSuffix(where, ".go") {
			t.Errorf("row names %q, neither a file of this package nor a path under pkg/controlplane", where)
			continue
		}
		named[where]++
	}

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") || f == "workarounds.go" })
	for _, f := range files {
		switch n := named[f]; n {
		case 1:
		case 0:
			t.Errorf("%s has no row in docs/architecture.md's \"Workarounds for upstream\"", f)
		default:
			t.Errorf("%s has %d rows in docs/architecture.md's \"Workarounds for upstream\", want one (a file per workaround)", f, n)
		}
	}
	for f := range named {
		if !slices.Contains(files, f) {
			t.Errorf("docs/architecture.md's \"Workarounds for upstream\" has a row for %s, which this package does not have", f)
		}
	}
}

// tableRows returns the body rows of the first table after heading in doc.
func tableRows(t *testing.T, doc, heading string) []string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/architecture.md has no %q", heading)
	}
	var rows []string
	inTable := false
	for _, line := range strings.Split(doc[i+1:], "\n")[1:] {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		if strings.HasPrefix(line, "| where ") || strings.HasPrefix(line, "| ---") {
			continue
		}
		rows = append(rows, line)
	}
	return rows
}
