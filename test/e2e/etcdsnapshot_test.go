package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// TestEtcdSnapshotRestore backs up a running 3-member cluster while a
// writer writes, and restores it as a new cluster with new member names on
// new ports, as docs/operations.md says: every create acknowledged before
// the snapshot is there, read through an API server against the new
// cluster, which knows nothing of the old members. Status, defrag and
// alarms answer on the way; a truncated snapshot or a data dir in use is
// refused and nothing is touched.
func TestEtcdSnapshotRestore(t *testing.T) {
	t.Parallel()
	c := newHACluster(t)
	a := &allInOne{t: t, binary: gcpBinary, dataDir: c.base}
	server := c.startAPIServer(a)
	tls := []string{"--etcd-cafile", c.p("etcd/ca.crt"), "--etcd-certfile", c.p("apiserver-etcd-client.crt"), "--etcd-keyfile", c.p("apiserver-etcd-client.key")}
	gcp := func(args ...string) string { t.Helper(); return mustGCP(t, args...) }

	status := gcp(append([]string{"etcd", "status", "--etcd-servers", c.etcdURLs}, tls...)...)
	if strings.Count(status, "https://127.0.0.1:") != 3 || !strings.Contains(status, "No alarms.") {
		t.Fatalf("etcd status of 3 members:\n%s", status)
	}
	if out := gcp(append([]string{"etcd", "defrag", "--etcd-servers", c.etcdURLs}, tls...)...); strings.Count(out, "Defragmented") != 3 {
		t.Fatalf("defrag of 3 members:\n%s", out)
	}

	a.kubectl("--server", server, "create", "namespace", "snap")
	w := startWriter(t, a.kubeconfig(), server, "snap", 0, 100000)
	w.waitMore(50, 60*time.Second)
	before := w.count()
	snap := filepath.Join(c.base, "backup.db")
	member0 := fmt.Sprintf("https://127.0.0.1:%d", c.members[0].client)
	// A new cluster writes its storage version into the database once its
	// members agree on a cluster version (etcd looks every 4 s); a snapshot
	// taken before says "storage version unknown". Until then status shows
	// the version etcd infers from older fields, 3.5, so the wait is for
	// the storage version to match the server's own.
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		out, code := runGCP(t, append([]string{"etcd", "status", "--etcd-servers", member0}, tls...)...)
		server, storage := column(out, "VERSION"), column(out, "STORAGE VERSION")
		if code != 0 || server == "" || majorMinor(storage) != majorMinor(server) {
			return fmt.Errorf("storage version %q, server %q (exit %d):\n%s", storage, server, code, out)
		}
		return nil
	})
	saved := gcp(append([]string{"etcd", "snapshot", "save", snap, "--etcd-servers", member0}, tls...)...)
	w.stop()
	if fi, err := os.Stat(snap); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot file: %v, mode %v", err, fi.Mode())
	}
	mustContain(t, saved, "revision", "keys")
	mustContain(t, gcp("etcd", "snapshot", "status", snap), "revision", "etcd storage version 3.")
	if out, code := runGCP(t, append([]string{"etcd", "snapshot", "save", snap, "--etcd-servers", member0}, tls...)...); code == 0 || !strings.Contains(out, "exists") {
		t.Errorf("snapshot save over an existing file: exit %d\n%s", code, out)
	}

	// Bad input first: nothing may be created or changed.
	truncated := filepath.Join(c.base, "truncated.db")
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truncated, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(c.base, "corrupt.db")
	data[len(data)/3] ^= 0xff
	if err := os.WriteFile(corrupt, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, dir, want string
	}{
		{truncated, filepath.Join(c.base, "never"), "not a usable etcd snapshot"},
		{corrupt, filepath.Join(c.base, "never"), "checksum does not match"},
		{snap, filepath.Join(c.base, c.members[0].name), "is not empty"},
	} {
		out, code := runGCP(t, "etcd", "snapshot", "restore", tc.file, "--data-dir", tc.dir, "--name", "x")
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("restore %s into %s: exit %d, want %q\n%s", tc.file, tc.dir, code, tc.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(c.base, "never")); !os.IsNotExist(err) {
		t.Errorf("a failed restore left %s behind: %v", filepath.Join(c.base, "never"), err)
	}

	// The new cluster: three new names on new ports, their certificates
	// from the same etcd CA.
	r := &haCluster{t: t, base: c.base, pki: c.pki}
	var initial, clients []string
	for i := range 3 {
		m := etcdMember{name: fmt.Sprintf("restored-%d", i), client: freePort(t), peer: freePort(t), metrics: freePort(t)}
		r.members = append(r.members, m)
		initial = append(initial, fmt.Sprintf("%s=https://127.0.0.1:%d", m.name, m.peer))
		clients = append(clients, fmt.Sprintf("https://127.0.0.1:%d", m.client))
		gcp("pki", "init", "--dir", c.pki, "--etcd-member", m.name+"=127.0.0.1")
	}
	r.initial, r.etcdURLs = strings.Join(initial, ","), strings.Join(clients, ",")
	for _, m := range r.members {
		gcp("etcd", "snapshot", "restore", snap, "--data-dir", filepath.Join(c.base, m.name), "--name", m.name,
			"--initial-cluster", r.initial, "--initial-advertise-peer-urls", fmt.Sprintf("https://127.0.0.1:%d", m.peer))
	}
	for i := range r.members {
		r.startMember(i)
	}
	for i := range r.members {
		r.waitMember(i)
	}
	list := gcp(append([]string{"etcd", "member", "list", "--etcd-servers", r.etcdURLs}, tls...)...)
	if strings.Count(list, "restored-") != 3 || strings.Contains(list, "etcd-") {
		t.Fatalf("members of the restored cluster:\n%s", list)
	}
	restored := r.startAPIServer(a)
	w.verifyFirst(a.kubeconfig(), restored, before)
	a.kubectl("--server", restored, "create", "configmap", "after-restore", "-n", "snap", "--from-literal=k=v")
}

// majorMinor is "3.7" of "3.7.0"; storage versions are kept to the minor.
func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[0] + "." + parts[1]
}

// column returns the value under header in the first row of a table that
// gcp printed with its columns two or more spaces apart.
func column(table, header string) string {
	lines := strings.Split(table, "\n")
	if len(lines) < 2 {
		return ""
	}
	apart := regexp.MustCompile(`\s{2,}`)
	headers, row := apart.Split(strings.TrimSpace(lines[0]), -1), apart.Split(strings.TrimSpace(lines[1]), -1)
	for i, h := range headers {
		if h == header && i < len(row) {
			return row[i]
		}
	}
	return ""
}
