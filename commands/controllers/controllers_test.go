package controllers

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/test/clidefaults"
)

// TestBadFlagsAreOneLineError: every problem with the flags, on one line,
// joined as the other commands join theirs (utilerrors.NewAggregate).
func TestBadFlagsAreOneLineError(t *testing.T) {
	cmd := NewCommand(context.Background(), "gcp", layering.Generic())
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--controllers=no-such-controller", "--secure-port=0"})
	err := cmd.Execute()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`"no-such-controller" is not in the list of known controllers`, "--kubeconfig is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q is more than one line", err)
	}
}

// TestCLIDefaultsAreTheLibrarys: `gcp controllers` with no flags
// configures the controller manager a library caller gets from
// controllers.NewOptions, field for field, leader election included:
// registering a flag sets no default of its own.
func TestCLIDefaultsAreTheLibrarys(t *testing.T) {
	comp := clidefaults.Generic(t)
	cli := NewOptions(comp)
	library := controllers.NewOptions(comp.Controllers)
	if !library.Generic.LeaderElection.LeaderElect {
		t.Error("controllers.NewOptions has leader election off; gcp controllers runs with it on by default")
	}
	clidefaults.Compare(t, library, cli, cli.AddFlags)
}
