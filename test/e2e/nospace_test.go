package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestNoSpaceRecovery fills etcd past a tiny --quota-backend-bytes, as a
// runaway client would fill a real one: writes then fail at once with 507
// Insufficient Storage and etcd's error instead of hanging, reads go on, /readyz fails naming the alarm,
// and docs/operations.md's recovery (delete, gcp etcd compact, defrag,
// alarm disarm) brings writes back with nothing lost.
func TestNoSpaceRecovery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := startAllInOne(t, dir, "--quota-backend-bytes", quota8MiB)
	a.kubectl("create", "configmap", "kept", "--from-literal=k=v")

	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 900<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	var created []string
	var refused string
	for i := 0; i < 40 && refused == ""; i++ {
		name := fmt.Sprintf("big-%d", i)
		start := time.Now()
		out, err := a.kubectlErr("create", "configmap", name, "--from-file=d="+big, "-v=6")
		if took := time.Since(start); took > 20*time.Second {
			t.Fatalf("a write against a full etcd took %v", took)
		}
		if err != nil {
			refused = out
			break
		}
		created = append(created, name)
	}
	if !strings.Contains(refused, "database space exceeded") || !strings.Contains(refused, `status="507 Insufficient Storage"`) {
		t.Fatalf("after %d big configmaps no write was refused with 507 for space: %q", len(created), refused)
	}
	if out := a.kubectl("get", "configmap", "kept", "-o", "jsonpath={.data.k}"); out != "v" {
		t.Fatalf("read while NOSPACE: %q", out)
	}
	etcdFlags := []string{"--etcd-servers", "unix://" + filepath.Join(dir, "etcd.sock")}
	a.eventually(t, "readyz names the NOSPACE alarm", 10*time.Second, func(out string, err error) bool {
		return err != nil && strings.Contains(out, "[-]etcd-alarm-nospace failed")
	}, "get", "--raw", "/readyz?verbose")
	if out, _ := runGCP(t, append([]string{"etcd", "alarm", "list"}, etcdFlags...)...); !strings.Contains(out, "Alarm NOSPACE") {
		t.Fatalf("gcp etcd alarm list:\n%s", out)
	}
	// What the EtcdNoSpace alert of docs/operations.md reads, on gcp start's /metrics.
	if out := a.kubectl("get", "--raw", "/metrics"); !regexp.MustCompile(`\netcd_debugging_server_alarms\{alarm_type="NOSPACE",[^}]*\} 1\n`).MatchString(out) {
		t.Errorf("/metrics has no etcd_debugging_server_alarms{alarm_type=\"NOSPACE\"} 1 while the alarm is raised")
	}

	// The recovery of docs/operations.md.
	a.kubectl(append([]string{"delete", "configmap"}, created...)...)
	for _, step := range [][]string{{"etcd", "compact"}, {"etcd", "defrag"}, {"etcd", "alarm", "disarm"}} {
		mustGCP(t, append(step, etcdFlags...)...)
	}
	a.kubectl("create", "configmap", "after-recovery", "--from-literal=k=v")
	a.eventually(t, "readyz after the recovery", 10*time.Second, func(_ string, err error) bool { return err == nil }, "get", "--raw", "/readyz")
	if out := a.kubectl("get", "configmap", "kept", "-o", "jsonpath={.data.k}"); out != "v" {
		t.Fatalf("configmap kept after the recovery: %q", out)
	}
}

// quota8MiB is a quota that gcp start's bootstrap objects fit in with
// room for a few big ConfigMaps.
const quota8MiB = "8388608"
