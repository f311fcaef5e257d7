package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	gcpetcd "github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/test/poll"
)

// TestAPIServerCompactsEtcd: the API server compacts etcd's history every
// --etcd-compaction-interval (5 minutes by default, 2 s here), so an old
// revision of an object is gone from etcd after an update, while the
// object's current value stays.
func TestAPIServerCompactsEtcd(t *testing.T) {
	t.Parallel()
	c := newEtcdCluster(t, 1)
	a := &allInOne{t: t, binary: gcpBinary, dataDir: c.base}
	server := c.startAPIServerOn(a, c.etcdURLs, "--etcd-compaction-interval", "2s")
	a.kubectl("--server", server, "create", "configmap", "history", "--from-literal=v=1")
	first, err := strconv.ParseInt(strings.TrimSpace(a.kubectl("--server", server, "get", "configmap", "history", "-o", "jsonpath={.metadata.resourceVersion}")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	a.kubectl("--server", server, "patch", "configmap", "history", "--type=merge", "-p", `{"data":{"v":"2"}}`)

	cfg, err := gcpetcd.ClientConfig(strings.Split(c.etcdURLs, ","), c.p("apiserver-etcd-client.crt"), c.p("apiserver-etcd-client.key"),
		c.p("etcd/ca.crt"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	key := "/registry/configmaps/default/history"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if resp, err := client.Get(ctx, key, clientv3.WithRev(first)); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("revision %d right after the update: %v, %v", first, resp, err)
	}
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		_, err := client.Get(ctx, key, clientv3.WithRev(first))
		if !errors.Is(err, rpctypes.ErrCompacted) {
			return fmt.Errorf("revision %d of %s still readable (err %v): not compacted yet", first, key, err)
		}
		return nil
	})
	if out := a.kubectl("--server", server, "get", "configmap", "history", "-o", "jsonpath={.data.v}"); out != "2" {
		t.Fatalf("configmap after compaction: %q", out)
	}
}
