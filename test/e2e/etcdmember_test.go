package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestEtcdMemberJoin grows a running 3-member cluster as an operator
// would: `gcp pki init` again for the new member's certificates, `gcp etcd
// member add` (a learner), `gcp etcd` with --initial-cluster-state
// existing and the --initial-cluster that add printed, `gcp etcd member
// promote` once it has caught up. The new member then serves what was
// written before it joined, to an API server that talks to it alone; an
// old member is removed.
func TestEtcdMemberJoin(t *testing.T) {
	t.Parallel()
	c := newHACluster(t)
	a := &allInOne{t: t, binary: gcpBinary, dataDir: c.base}
	serverA := c.startAPIServer(a)
	a.kubectl("--server", serverA, "create", "configmap", "before-join", "--from-literal=k=v")
	// Writes go on through the whole change of membership.
	a.kubectl("--server", serverA, "create", "namespace", "writes")
	w := startWriter(t, a.kubeconfig(), serverA, "writes", 20*time.Millisecond, 20000)
	w.waitMore(5, 30*time.Second)

	tryMember := func(args ...string) (string, error) {
		out, code := runGCP(t, append([]string{"etcd", "member"}, append(args, "--etcd-servers", c.etcdURLs,
			"--etcd-cafile", c.p("etcd/ca.crt"), "--etcd-certfile", c.p("apiserver-etcd-client.crt"),
			"--etcd-keyfile", c.p("apiserver-etcd-client.key"))...)...)
		if code != 0 {
			return out, fmt.Errorf("gcp etcd member %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		return out, nil
	}
	member := func(args ...string) string {
		t.Helper()
		out, err := tryMember(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	m := etcdMember{name: "etcd-3", client: freePort(t), peer: freePort(t), metrics: freePort(t)}
	mustGCP(t, "pki", "init", "--dir", c.pki, "--etcd-member", m.name+"=127.0.0.1")
	// etcd adds a member only once every member has been connected for
	// 5 s; a cluster that has just started says it is unhealthy.
	var added string
	eventually(t, 30*time.Second, func() (err error) {
		added, err = tryMember("add", m.name, "--peer-urls", fmt.Sprintf("https://127.0.0.1:%d", m.peer))
		if err != nil && !strings.Contains(added, "unhealthy cluster") {
			t.Fatal(err)
		}
		return err
	})
	initial := regexp.MustCompile(`--initial-cluster (\S+)`).FindStringSubmatch(added)
	if initial == nil || !strings.Contains(added, "learner") || strings.Count(initial[1], "=https://") != 4 {
		t.Fatalf("member add printed no 4-member --initial-cluster for a learner:\n%s", added)
	}
	c.members = append(c.members, m)
	c.runMember(&c.members[3], initial[1], "existing")
	// A learner is promoted once it has caught up with the leader.
	eventually(t, 60*time.Second, func() error {
		_, err := tryMember("promote", m.name)
		return err
	})
	list := member("list")
	if rows := strings.Split(strings.TrimSpace(list), "\n"); len(rows) != 5 || !regexp.MustCompile(`etcd-3\s+started\s+false`).MatchString(list) {
		t.Fatalf("member list after promote, want 4 started voting members:\n%s", list)
	}
	c.waitMember(3)

	serverB := c.startAPIServerOn(a, fmt.Sprintf("https://127.0.0.1:%d", m.client))
	if out := a.kubectl("--server", serverB, "get", "configmap", "before-join", "-o", "jsonpath={.data.k}"); out != "v" {
		t.Fatalf("configmap written before the join, read through the new member: %q", out)
	}

	if out, err := tryMember("promote", "etcd-9"); err == nil || !strings.Contains(out, "no member named or with ID") {
		t.Errorf("promote of a member that does not exist: %v\n%s", err, out)
	}
	member("remove", "etcd-0")
	list = member("list")
	if strings.Contains(list, "etcd-0") || len(strings.Split(strings.TrimSpace(list), "\n")) != 4 {
		t.Fatalf("member list after removing etcd-0:\n%s", list)
	}
	a.kubectl("--server", serverB, "create", "configmap", "after-remove", "--from-literal=k=v")
	if out := a.kubectl("--server", serverA, "get", "configmap", "after-remove", "-o", "jsonpath={.data.k}"); out != "v" {
		t.Fatalf("configmap written through the new member, read through A: %q", out)
	}
	// Removing the leader costs an election, so a write may fail then; none
	// that was acknowledged may be lost.
	w.waitMore(5, 30*time.Second)
	w.verify(a.kubeconfig(), serverB)
}
