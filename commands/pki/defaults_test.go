package pki

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// TestCLIDefaultsAreTheLibrarys: `gcp pki` has no options of its own; its
// defaults name what the other commands serve by default (the library's
// defaults): the kubeconfigs point at `gcp apiserver`'s default port and
// the etcd certificates are for `gcp etcd`'s default member name.
func TestCLIDefaultsAreTheLibrarys(t *testing.T) {
	u, err := url.Parse(DefaultServer)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(options.DefaultSecurePort); u.Port() != want {
		t.Errorf("--server defaults to %s, port %s; the API server serves on %s", DefaultServer, u.Port(), want)
	}
	if name, _, _ := strings.Cut(DefaultEtcdMember, "="); name != etcd.DefaultName {
		t.Errorf("--etcd-member defaults to %s; gcp etcd's member is called %s", DefaultEtcdMember, etcd.DefaultName)
	}
	initCmd, _, err := NewCommand("gcp").Find([]string{"init"})
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"server": DefaultServer, "dir": DefaultDir} {
		if got := initCmd.Flag(flag).DefValue; got != want {
			t.Errorf("init --%s defaults to %q, want %q", flag, got, want)
		}
	}
}
