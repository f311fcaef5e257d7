package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	gcpetcd "github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/test/poll"
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
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() (err error) {
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
	// Promoting a learner that has not started (it has no name yet: by its
	// ID) is refused, saying so.
	id := regexp.MustCompile(`Added member ([0-9a-f]+) `).FindStringSubmatch(added)
	if id == nil {
		t.Fatalf("member add printed no ID:\n%s", added)
	}
	if out, err := tryMember("promote", id[1]); err == nil || !strings.Contains(out, "in sync with leader (it has not started yet;") {
		t.Fatalf("promote of a learner that has not started: %v", err)
	}
	c.runMember(&c.members[3], initial[1], "existing")
	// The learner serves before it is promoted: the readiness its static
	// pod probes says so, though etcd's whole /readyz fails while it is a
	// learner.
	poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
		if body, code := httpGet(m.metricsURL() + "/readyz?exclude=non_learner"); code != 200 {
			return fmt.Errorf("a learner's /readyz?exclude=non_learner: %d %s", code, body)
		}
		return nil
	})
	if body, code := httpGet(m.metricsURL() + "/readyz?verbose"); code == 200 || !strings.Contains(body, "non_learner failed") {
		t.Fatalf("a learner's /readyz: %d, want it failing its non_learner check\n%s", code, body)
	}
	// A learner is promoted once it has caught up with the leader, with the
	// command add printed, connection flags and all.
	promote := regexp.MustCompile(`gcp etcd member promote (\S.*)`).FindStringSubmatch(added)
	if promote == nil || !strings.Contains(promote[1], "--etcd-servers "+c.etcdURLs) || !strings.Contains(promote[1], "--etcd-keyfile "+c.p("apiserver-etcd-client.key")) {
		t.Fatalf("member add printed no promote command with the connection flags:\n%s", added)
	}
	poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
		out, code := runGCP(t, append([]string{"etcd", "member", "promote"}, strings.Fields(promote[1])...)...)
		if code != 0 {
			// Refused for a learner that is behind, it says how far.
			if strings.Contains(out, "in sync with leader") && !regexp.MustCompile(`its raft index is \d+, the leader's \d+`).MatchString(out) {
				t.Fatalf("promote of a learner that is behind does not say how far:\n%s", out)
			}
			return fmt.Errorf("the printed promote: exit %d\n%s", code, out)
		}
		return nil
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
	// The removed member's process ends by itself, saying why, with the
	// exit code its systemd unit does not restart; started again on its
	// data dir (as a static pod's kubelet would), it ends so at once.
	for try := range 2 {
		removed := c.members[0]
		select {
		case <-removed.proc.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("start %d: etcd-0 still runs 30 s after its removal:\n%s", try, removed.proc.log)
		}
		if code, log := removed.proc.cmd.ProcessState.ExitCode(), removed.proc.log.String(); code != gcpetcd.RemovedExitCode ||
			!strings.Contains(log, "this member was removed from its etcd cluster") || !strings.Contains(log, "gcp etcd member add") {
			t.Fatalf("start %d: etcd-0 exited %d after its removal, want %d saying so:\n%s", try, code, gcpetcd.RemovedExitCode, log)
		}
		if try == 0 {
			c.runMember(&c.members[0], c.initial, "existing")
		}
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

// TestEtcdStatusWithAMemberDown SIGKILLs the etcd leader of a 3-member
// cluster and runs `gcp etcd status` with the dead member listed first, as
// an operator would at that moment: each member has its own short
// deadline, so the command answers long before --command-timeout, shows
// the dead member as unreachable, the two others as they are with the new
// leader among them, and the alarms; it exits 1 because a member did not
// answer.
func TestEtcdStatusWithAMemberDown(t *testing.T) {
	t.Parallel()
	c := newHACluster(t)
	tls := []string{"--etcd-cafile", c.p("etcd/ca.crt"), "--etcd-certfile", c.p("apiserver-etcd-client.crt"), "--etcd-keyfile", c.p("apiserver-etcd-client.key")}
	url := func(i int) string { return fmt.Sprintf("https://127.0.0.1:%d", c.members[i].client) }
	if out, code := runGCP(t, append([]string{"etcd", "status", "--etcd-servers", c.etcdURLs}, tls...)...); code != 0 || strings.Count(out, "https://127.0.0.1:") != 3 {
		t.Fatalf("etcd status of 3 live members: exit %d\n%s", code, out)
	}

	dead := c.leader()
	if err := c.members[dead].proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c.members[dead].proc.done
	servers := []string{url(dead)}
	for i := range c.members {
		if i != dead {
			servers = append(servers, url(i))
		}
	}
	// The command's own timeout is long: before each member had its own
	// deadline, the dead one used all of it.
	const commandTimeout = 60 * time.Second
	apart := regexp.MustCompile(`\s{2,}`)
	var last string
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		start := time.Now()
		out, code := runGCP(t, append([]string{"etcd", "status", "--etcd-servers", strings.Join(servers, ","), "--command-timeout", commandTimeout.String()}, tls...)...)
		if took := time.Since(start); took >= commandTimeout/2 {
			t.Fatalf("etcd status with a member down took %v, its --command-timeout being %v:\n%s", took, commandTimeout, out)
		}
		if code != 1 || !strings.Contains(out, "1 of 3 members did not answer: "+url(dead)) || !strings.Contains(out, "No alarms.") {
			t.Fatalf("etcd status with %s down: exit %d, want 1, the member named and the alarms\n%s", url(dead), code, out)
		}
		leaders := 0
		for _, line := range strings.Split(out, "\n") {
			cols := apart.Split(strings.TrimSpace(line), -1)
			switch {
			case len(cols) < 2 || !strings.HasPrefix(cols[0], "https://"):
			case cols[0] == url(dead):
				if cols[1] != "unreachable" {
					t.Fatalf("the dead member's row: %q, want it unreachable\n%s", line, out)
				}
			case len(cols) != 11:
				t.Fatalf("a live member's row: %q, want all 11 columns\n%s", line, out)
			case cols[6] == "true":
				leaders++
			}
		}
		if leaders != 1 {
			return fmt.Errorf("%d leaders among the live members (an election may be under way):\n%s", leaders, out)
		}
		last = out
		return nil
	})
	t.Logf("gcp etcd status with the old leader down:\n%s", last)
}

// TestEtcdMoveLeader moves the leadership of a 3-member cluster to another
// member with `gcp etcd move-leader`, as an operator does before stopping
// or removing the leader, asking only a member that does not lead: the
// command finds the leader itself. Moving it to the leader, or to a member
// that does not exist, says so.
func TestEtcdMoveLeader(t *testing.T) {
	t.Parallel()
	c := newHACluster(t)
	old := c.leader()
	target, asked := (old+1)%3, (old+2)%3
	moveLeader := func(to string) (string, int) {
		return runGCP(t, "etcd", "move-leader", to, "--etcd-servers", fmt.Sprintf("https://127.0.0.1:%d", c.members[asked].client),
			"--etcd-cafile", c.p("etcd/ca.crt"), "--etcd-certfile", c.p("apiserver-etcd-client.crt"), "--etcd-keyfile", c.p("apiserver-etcd-client.key"))
	}
	out, code := moveLeader(c.members[target].name)
	if code != 0 || !regexp.MustCompile(`Leadership moved from member [0-9a-f]+ \(`+c.members[old].name+`\) to member [0-9a-f]+ \(`+c.members[target].name+`\)`).MatchString(out) {
		t.Fatalf("move-leader %s: exit %d\n%s", c.members[target].name, code, out)
	}
	poll.Until(t, 200*time.Millisecond, 10*time.Second, func() error {
		if now := c.leader(); now != target {
			return fmt.Errorf("the leader is %s, want %s", c.members[now].name, c.members[target].name)
		}
		return nil
	})
	if out, code := moveLeader(c.members[target].name); code != 0 || !strings.Contains(out, "is the leader already") {
		t.Fatalf("move-leader to the leader: exit %d\n%s", code, out)
	}
	if out, code := moveLeader("etcd-9"); code != 1 || !strings.Contains(out, `no member named or with ID`) {
		t.Fatalf("move-leader to a member that does not exist: exit %d\n%s", code, out)
	}
}
