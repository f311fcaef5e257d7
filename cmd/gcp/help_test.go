package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gcp-project/gcp/commands/multicall"
	"github.com/gcp-project/gcp/pkg/layering"
)

var update = flag.Bool("update", false, "rewrite the golden --help and flag files in testdata/")

// TestHelpGolden keeps each command's --help, and so its reviewed flag
// surface, in testdata/ (named by the command's path, e.g.
// etcd_member_list.help): a library bump that adds or drops a flag fails
// here and shows the difference. Every subcommand of gcp's own commands is
// kept; of kubectl only its top level. Run `go test ./cmd/gcp -update` to
// accept.
func TestHelpGolden(t *testing.T) {
	var paths [][]string
	var walk func(path []string, cmd *cobra.Command)
	walk = func(path []string, cmd *cobra.Command) {
		paths = append(paths, path)
		if path[0] == "kubectl" {
			return
		}
		for _, sub := range cmd.Commands() {
			walk(append(slices.Clip(path), sub.Name()), sub)
		}
	}
	for _, cmd := range multicall.NewRoot(context.Background(), product()).Commands() {
		walk([]string{cmd.Name()}, cmd)
	}
	for _, path := range paths {
		name := strings.Join(path, "_")
		t.Run(name, func(t *testing.T) {
			root := multicall.NewRoot(context.Background(), product())
			cmd, _, err := root.Find(path)
			if err != nil {
				t.Fatal(err)
			}
			var help bytes.Buffer
			root.SetOut(&help)
			root.SetErr(&help)
			if cmd.DisableFlagParsing {
				// The command parses its own flags, --help included.
				root.SetArgs(append(slices.Clip(path), "--help"))
				if err := root.Execute(); err != nil {
					t.Fatal(err)
				}
			} else if err := cmd.Help(); err != nil {
				t.Fatal(err)
			}
			var flags []string
			cmd.Flags().VisitAll(func(f *pflag.Flag) { flags = append(flags, "--"+f.Name) })
			cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { flags = append(flags, "--"+f.Name) })
			compareGolden(t, filepath.Join("testdata", name+".help"), help.String())
			compareGolden(t, filepath.Join("testdata", name+".flags"), strings.Join(flags, "\n")+"\n")
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

// TestHelpSaysTheProductsName: a library user's binary, whose root has
// another name, says that name, never "gcp", in every command's help, as
// gcp's own says "gcp". Names that are data, not the product (the Lease
// gcp-controllers, the data dir .gcp, the etcd member gcp), may stay.
func TestHelpSaysTheProductsName(t *testing.T) {
	root := multicall.NewRoot(context.Background(), multicall.Product{Name: "widgets", Stack: layering.Generic()})
	gcp := regexp.MustCompile(`(^|[^-./="\w])gcp([^-="\w]|$)`)
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		var help bytes.Buffer
		cmd.SetOut(&help)
		cmd.SetErr(&help)
		if cmd.DisableFlagParsing {
			root.SetOut(&help)
			root.SetArgs(append(strings.Fields(strings.TrimPrefix(cmd.CommandPath(), "widgets ")), "--help"))
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
		} else if err := cmd.Help(); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(help.String(), "\n") {
			if gcp.MatchString(line) {
				t.Errorf("%s --help says gcp: %s", cmd.CommandPath(), strings.TrimSpace(line))
			}
		}
		if cmd.Name() == "kubectl" {
			return
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	for _, cmd := range root.Commands() {
		walk(cmd)
	}
	if t.Failed() {
		return
	}
	var out bytes.Buffer
	root.SetOut(&out)
	if err := root.Help(); err != nil {
		t.Fatal(err)
	}
	if gcp.MatchString(out.String()) {
		t.Errorf("widgets --help says gcp:\n%s", out.String())
	}
}

// TestNoBackquotesInFlagHelp: pflag shows the first `quoted` words of a
// flag's help as the name of its value ("--snapshot-interval gcp
// snapshot" instead of "--snapshot-interval duration"), so no flag of
// gcp's own commands has any.
func TestNoBackquotesInFlagHelp(t *testing.T) {
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		check := func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				name, _ := pflag.UnquoteUsage(f)
				t.Errorf("%s --%s shows its value as %q: %s", cmd.CommandPath(), f.Name, name, f.Usage)
			}
		}
		cmd.LocalFlags().VisitAll(check)
		if cmd.Name() == "kubectl" {
			return
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(multicall.NewRoot(context.Background(), product()))
}
