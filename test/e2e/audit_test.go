package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// TestAuditLog: gcp start --audit-log-path writes an audit log with the
// default policy: who created which object (with its body), Secrets by
// metadata only (no value in the log), no health checks.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "audit.log")
	a := startAllInOne(t, dir, "--audit-log-path", log)
	const marker = "audit-secret-marker"
	a.kubectl("create", "configmap", "audited", "--from-literal=k=v")
	a.kubectl("create", "secret", "generic", "hidden", "--from-literal=password="+marker)
	a.kubectl("get", "--raw", "/readyz")

	type event struct {
		Level      string `json:"level"`
		Verb       string `json:"verb"`
		RequestURI string `json:"requestURI"`
		User       struct {
			Username string `json:"username"`
		} `json:"user"`
		ObjectRef *struct {
			Resource, Name string
		} `json:"objectRef"`
	}
	var created, secret bool
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		data, err := os.ReadFile(log)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), marker) {
			t.Fatalf("the audit log holds a secret's value")
		}
		created, secret = false, false
		scanner := bufio.NewScanner(strings.NewReader(string(data)))
		scanner.Buffer(nil, 1<<20)
		for scanner.Scan() {
			var e event
			if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
				t.Fatalf("audit log line is not an event: %v\n%s", err, scanner.Text())
			}
			if strings.HasPrefix(e.RequestURI, "/readyz") || strings.HasPrefix(e.RequestURI, "/healthz") {
				t.Fatalf("health check in the audit log: %s", scanner.Text())
			}
			if e.ObjectRef == nil || e.Verb != "create" {
				continue
			}
			switch e.ObjectRef.Resource {
			case "configmaps":
				created = created || (e.ObjectRef.Name == "audited" && e.User.Username == "gcp-admin")
			case "secrets":
				secret = secret || (e.ObjectRef.Name == "hidden" && e.Level == "Metadata")
			}
		}
		if !created || !secret {
			return errors.New("the creates are not in the audit log yet")
		}
		return nil
	})
	for _, f := range []string{filepath.Join(dir, "audit-policy.yaml"), log} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v, want 0600", f, err, fi.Mode())
		}
	}
}
