package controllers

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
)

// TestRunStopsCleanlyBeforeTheServerAnswers: a manager stopped while it
// still waits for its API server (gcp start stopped right after it
// started) returns no error.
func TestRunStopsCleanlyBeforeTheServerAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := Run(ctx, &Config{Kubeconfig: &rest.Config{Host: "https://" + addr}}); err != nil {
		t.Fatalf("Run after a stop: %v, want nil", err)
	}
}

// TestControllersFlag: --controllers picks controllers by name and alias,
// '*' means the on-by-default ones, '-name' turns one off.
func TestControllersFlag(t *testing.T) {
	descriptors := []Descriptor{
		{Name: "a-controller"},
		{Name: "b-controller", DisabledByDefault: true},
		{Name: "c-controller", Aliases: []string{"cee"}},
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag string
		want []string
	}{
		{"", []string{"a-controller", "c-controller"}},
		{"*", []string{"a-controller", "c-controller"}},
		{"*,-a-controller", []string{"c-controller"}},
		{"*,b-controller", []string{"a-controller", "b-controller", "c-controller"}},
		{"cee", []string{"c-controller"}},
		{"-cee,*", []string{"a-controller"}},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			o := NewOptions(descriptors)
			fss := &cliflag.NamedFlagSets{}
			o.AddFlags(fss)
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			for _, f := range fss.FlagSets {
				fs.AddFlagSet(f)
			}
			args := []string{"--kubeconfig", kubeconfig, "--secure-port", "0"}
			if tc.flag != "" {
				args = append(args, "--controllers", tc.flag)
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			c, err := o.Config()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range c.enabled() {
				got = append(got, d.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("--controllers=%q runs %v, want %v", tc.flag, got, tc.want)
			}
		})
	}
	o := NewOptions(descriptors)
	o.Kubeconfig = kubeconfig
	o.SecureServing.BindPort = 0
	o.Generic.Controllers = []string{"*", "nope"}
	if _, err := o.Config(); err == nil {
		t.Error("an unknown controller name was accepted")
	}
	o.Generic.Controllers = nil
	o.Generic.LeaderMigration.Enabled = true
	if _, err := o.Config(); err == nil || !strings.Contains(err.Error(), "--enable-leader-migration") {
		t.Errorf("--enable-leader-migration: got %v, want an error naming it", err)
	}
}

// TestNameClashes: descriptors given to NewOptions directly, not through
// a stack's Compose, are refused when --controllers could not tell two
// apart by a name or an alias.
func TestNameClashes(t *testing.T) {
	for name, c := range map[string]struct {
		descriptors []Descriptor
		want        string
	}{
		"alias is a name":   {[]Descriptor{{Name: "a"}, {Name: "b", Aliases: []string{"a"}}}, `"a" is both controller "a"'s and controller "b"'s`},
		"alias is an alias": {[]Descriptor{{Name: "a", Aliases: []string{"x"}}, {Name: "b", Aliases: []string{"x"}}}, `"x" is both controller "a"'s and controller "b"'s`},
		"name twice":        {[]Descriptor{{Name: "a"}, {Name: "a"}}, `two controllers are named "a"`},
	} {
		o := NewOptions(c.descriptors)
		o.Kubeconfig = "unread"
		var got []string
		for _, err := range o.Validate() {
			got = append(got, err.Error())
		}
		if !slices.ContainsFunc(got, func(e string) bool { return strings.Contains(e, c.want) }) {
			t.Errorf("%s: Validate says %q, want %q", name, got, c.want)
		}
	}
	if errs := nameClashes([]Descriptor{{Name: "a", Aliases: []string{"aa"}}, {Name: "b", Aliases: []string{"bb"}}}); len(errs) != 0 {
		t.Errorf("distinct names refused: %v", errs)
	}
}
