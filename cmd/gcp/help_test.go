package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite the golden --help and flag files in testdata/")

// TestHelpGolden keeps each subcommand's --help, and so its reviewed flag
// surface, in testdata/: a library bump that adds or drops a flag fails
// here and shows the difference. Run `go test ./cmd/gcp -update` to accept.
func TestHelpGolden(t *testing.T) {
	for _, sub := range []string{"start", "apiserver", "controllers", "etcd", "version"} {
		t.Run(sub, func(t *testing.T) {
			root := newRoot(context.Background())
			cmd, _, err := root.Find([]string{sub})
			if err != nil {
				t.Fatal(err)
			}
			var help bytes.Buffer
			cmd.SetOut(&help)
			cmd.SetErr(&help)
			if err := cmd.Help(); err != nil {
				t.Fatal(err)
			}
			var flags []string
			cmd.Flags().VisitAll(func(f *pflag.Flag) { flags = append(flags, "--"+f.Name) })
			compareGolden(t, filepath.Join("testdata", sub+".help"), help.String())
			compareGolden(t, filepath.Join("testdata", sub+".flags"), strings.Join(flags, "\n")+"\n")
		})
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/gcp -update)", err)
	}
	if string(want) == got {
		return
	}
	wantLines := map[string]bool{}
	for _, l := range strings.Split(string(want), "\n") {
		wantLines[l] = true
	}
	gotLines := map[string]bool{}
	var added, removed []string
	for _, l := range strings.Split(got, "\n") {
		gotLines[l] = true
		if !wantLines[l] {
			added = append(added, "+ "+l)
		}
	}
	for _, l := range strings.Split(string(want), "\n") {
		if !gotLines[l] {
			removed = append(removed, "- "+l)
		}
	}
	t.Fatalf("%s is stale (review, then go test ./cmd/gcp -update):\n%s\n%s", path, strings.Join(added, "\n"), strings.Join(removed, "\n"))
}
