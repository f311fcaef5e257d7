package snapshot

import (
	"context"
	"fmt"
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// TestCLIDefaultsAreTheLibrarys: `gcp snapshot` has no options of its
// own; its flags default to what `gcp start` and the library use
// (allinone.NewOptions' snapshot fields, etcd.DefaultRevisionBump), so
// that a prune keeps as many snapshots as the schedule would.
func TestCLIDefaultsAreTheLibrarys(t *testing.T) {
	cmd := NewCommand(context.Background(), "gcp", allinone.DefaultDataDir)
	library := allinone.NewOptions()
	for _, c := range []struct{ path, flag, want string }{
		{"", "data-dir", library.DataDir},
		{"", "snapshot-dir", library.SnapshotDir},
		{"save", "compress", fmt.Sprint(library.SnapshotCompress)},
		{"prune", "snapshot-retention", fmt.Sprint(library.SnapshotRetention)},
		{"restore", "bump-revision", fmt.Sprint(etcd.DefaultRevisionBump)},
	} {
		sub := cmd
		if c.path != "" {
			var err error
			if sub, _, err = cmd.Find([]string{c.path}); err != nil {
				t.Fatal(err)
			}
		}
		f := sub.Flag(c.flag)
		if f == nil {
			t.Errorf("%s has no --%s", sub.CommandPath(), c.flag)
			continue
		}
		if f.DefValue != c.want {
			t.Errorf("%s --%s defaults to %q, the library to %q", sub.CommandPath(), c.flag, f.DefValue, c.want)
		}
	}
}
