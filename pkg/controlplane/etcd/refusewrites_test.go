package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/gcp-project/gcp/test/poll"
	"github.com/gcp-project/gcp/test/smalldisk"
)

// With a NOSPACE alarm raised for low disk, a refused write must not reach
// the WAL: etcd refuses puts only when it applies them, after raft has
// logged them, so clients that retry would fill the disk they are refused
// for. The member refuses them before they are proposed, through the
// in-process client (`gcp start`'s API server) and over gRPC (`gcp
// apiserver` against `gcp etcd`, etcdctl), while deletes still go through
// (they free space) and reads are served.
func TestRefusedWritesDoNotGrowTheWAL(t *testing.T) {
	t.Parallel()
	dir, _, h := startUnwatched(t)
	inProcess := inProcessT(t, h)
	// Quiet: every refused write is a warning in clientv3's log.
	overGRPC, err := clientv3.New(clientv3.Config{Endpoints: h.ClientURLs(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = overGRPC.Close() })
	ctx := context.Background()
	for _, k := range []string{"a", "b"} {
		put(t, inProcess, k, "v")
	}

	const min = 100 << 20
	var free atomic.Int64
	free.Store(min - 1)
	testDiskWatch(h, dir, min, &free).check(ctx)
	if !noSpaceRaised(t, inProcess) {
		t.Fatal("the watch raised no NOSPACE alarm")
	}

	value := strings.Repeat("x", 20<<10)
	const refused = 50
	before := smalldisk.WALWritten(t, dir)
	for name, c := range map[string]*clientv3.Client{"in-process": inProcess, "gRPC": overGRPC} {
		for i := 0; i < refused; i++ {
			if _, err := c.Put(ctx, "k", value); !errors.Is(err, rpctypes.ErrNoSpace) {
				t.Fatalf("%s put while the disk is low: %v, want %v", name, err, rpctypes.ErrNoSpace)
			}
			txn := c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("a"), ">", 0)).Then(clientv3.OpPut("a", value)).Else(clientv3.OpGet("a"))
			if _, err := txn.Commit(); !errors.Is(err, rpctypes.ErrNoSpace) {
				t.Fatalf("%s transaction that puts while the disk is low: %v, want %v", name, err, rpctypes.ErrNoSpace)
			}
			if _, err := c.Grant(ctx, 60); !errors.Is(err, rpctypes.ErrNoSpace) {
				t.Fatalf("%s lease grant while the disk is low: %v, want %v", name, err, rpctypes.ErrNoSpace)
			}
		}
	}
	// A bound far below one refused write's 20 KB per client and round.
	if grew := smalldisk.WALWritten(t, dir) - before; grew > 16<<10 {
		t.Fatalf("the WAL grew by %d bytes across %d refused writes of 20 KB", grew, 2*2*refused)
	}

	if got := get(t, overGRPC, "a"); got != "v" {
		t.Fatalf("read while the disk is low: %q", got)
	}
	for name, c := range map[string]*clientv3.Client{"in-process": inProcess, "gRPC": overGRPC} {
		key := map[string]string{"in-process": "a", "gRPC": "b"}[name]
		// The API server's delete: a transaction with no put.
		txn := c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), ">", 0)).Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key))
		if resp, err := txn.Commit(); err != nil || !resp.Succeeded {
			t.Fatalf("%s delete while the disk is low: %v", name, err)
		}
	}

	free.Store(resumeAbove(min))
	testDiskWatch(h, dir, min, &free).check(ctx)
	poll.Until(t, 20*time.Millisecond, 10*time.Second, func() error {
		if _, err := overGRPC.Put(ctx, "after", "v"); err != nil {
			return fmt.Errorf("put once space is back: %w", err)
		}
		return nil
	})
	put(t, inProcess, "after", "v")
}
