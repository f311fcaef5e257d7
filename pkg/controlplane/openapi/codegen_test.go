package openapi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedCodeIsCurrent runs hack/update-codegen.sh into a temporary
// directory and compares its output with the checked-in files, so that a
// library bump or a change to the script's package list cannot leave stale
// definitions behind.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs openapi-gen")
	}
	t.Parallel()

	root := filepath.Join("..", "..", "..")
	script := filepath.Join(root, "hack", "update-codegen.sh")
	// Reading the script makes go test's result cache depend on it.
	if _, err := os.ReadFile(script); err != nil {
		t.Fatal(err)
	}

	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "bash", script)
	cmd.Env = append(os.Environ(), "GCP_CODEGEN_OUTPUT_DIR="+out)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s failed: %v\n%s", script, err, output)
	}

	for generated, checkedIn := range map[string]string{
		"zz_generated.openapi.go":  "zz_generated.openapi.go",
		"api-rule-violations.list": filepath.Join(root, "hack", "api-rule-violations.list"),
	} {
		want, err := os.ReadFile(filepath.Join(out, generated))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(checkedIn)
		if err != nil {
			t.Fatalf("%v; run hack/update-codegen.sh", err)
		}
		if line, ok := firstDifference(got, want); ok {
			t.Errorf("%s is stale (first difference at line %d: have %q, generator writes %q); run hack/update-codegen.sh",
				checkedIn, line.number, line.have, line.want)
		}
	}
}

// differingLine is the first line where two files differ.
type differingLine struct {
	number     int
	have, want string
}

// firstDifference reports the first line at which have and want differ.
func firstDifference(have, want []byte) (differingLine, bool) {
	if bytes.Equal(have, want) {
		return differingLine{}, false
	}
	h, w := bytes.Split(have, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; ; i++ {
		var hl, wl []byte
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if i >= len(h) || i >= len(w) || !bytes.Equal(hl, wl) {
			return differingLine{number: i + 1, have: string(hl), want: string(wl)}, true
		}
	}
}

func TestFirstDifference(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		have, want string
		ok         bool
		line       int
	}{
		{have: "a\nb\n", want: "a\nb\n"},
		{have: "a\nb\n", want: "a\nc\n", ok: true, line: 2},
		{have: "a\n", want: "a\nb\n", ok: true, line: 2},
		{have: "a\nb\n", want: "a\n", ok: true, line: 2},
		{have: "", want: "x", ok: true, line: 1},
	} {
		d, ok := firstDifference([]byte(tc.have), []byte(tc.want))
		if ok != tc.ok || d.number != tc.line {
			t.Errorf("firstDifference(%q, %q) = line %d, %v; want line %d, %v", tc.have, tc.want, d.number, ok, tc.line, tc.ok)
		}
	}
}
