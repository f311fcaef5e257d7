package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcp-project/gcp/test/poll"
)

// TestRBACWithKubectl is the RBAC issue's walk-through with the real
// kubectl: a group bound to edit in one namespace, can-i, whoami, and a
// service account token that is forbidden until bound.
func TestRBACWithKubectl(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	a := startAllInOne(t, dataDir)

	a.kubectl("create", "namespace", "team-a")
	a.kubectl("create", "rolebinding", "dev-edit", "--clusterrole=edit", "--group=dev", "-n", "team-a")
	canI := func(args ...string) (string, bool) {
		t.Helper()
		out, err := a.kubectlErr(append([]string{"--as=alice", "--as-group=dev", "auth", "can-i"}, args...)...)
		return strings.TrimSpace(out), err == nil
	}
	// RBAC reads informer caches: give the fresh binding a moment.
	poll.Until(t, 100*time.Millisecond, 10*time.Second, func() error {
		if out, ok := canI("create", "configmaps", "-n", "team-a"); !ok || out != "yes" {
			return fmt.Errorf("can-i create configmaps -n team-a: %q", out)
		}
		return nil
	})
	if out, ok := canI("create", "configmaps", "-n", "default"); ok || !strings.HasPrefix(out, "no") {
		t.Fatalf("can-i create configmaps -n default: %q", out)
	}
	list := a.kubectl("--as=alice", "--as-group=dev", "auth", "can-i", "--list", "-n", "team-a")
	mustContain(t, list, "configmaps", "selfsubjectaccessreviews.authorization.k8s.io")

	mustContain(t, a.kubectl("auth", "whoami"), "gcp-admin", "system:masters")
	mustContain(t, a.kubectl("--as=alice", "--as-group=dev", "auth", "whoami"), "alice", "dev", "system:authenticated")

	a.kubectl("create", "serviceaccount", "robot", "-n", "team-a")
	token := strings.TrimSpace(a.kubectl("create", "token", "robot", "-n", "team-a", "--duration=10m"))
	if strings.Count(token, ".") != 2 {
		t.Fatalf("token is not a JWT: %q", token)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", a.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(bearer string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", cfg.Host+"/api/v1/namespaces/team-a/configmaps", nil)
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(token); code != http.StatusForbidden {
		t.Fatalf("unbound robot: want 403, got %d", code)
	}
	a.kubectl("create", "rolebinding", "robot-view", "--clusterrole=view", "--serviceaccount=team-a:robot", "-n", "team-a")
	poll.Until(t, 100*time.Millisecond, 10*time.Second, func() error {
		if code := get(token); code != http.StatusOK {
			return fmt.Errorf("bound robot got %d, want 200", code)
		}
		return nil
	})
	if code := get(token[:len(token)-4] + "AAAA"); code != http.StatusUnauthorized {
		t.Fatalf("tampered token: want 401, got %d", code)
	}
	a.kubectl("delete", "serviceaccount", "robot", "-n", "team-a")
	poll.Until(t, 100*time.Millisecond, 10*time.Second, func() error {
		if code := get(token); code != http.StatusUnauthorized {
			return fmt.Errorf("token of a deleted service account still works: %d", code)
		}
		return nil
	})

	// Bootstrap policy is reconciled at every start and keeps what users
	// added to the default roles. (Rules added to an aggregated role such
	// as edit are replaced by the aggregation controller, as upstream;
	// system:aggregate-to-edit is where additions go.)
	a.kubectl("patch", "clusterrole", "system:aggregate-to-edit", "--type=json", "-p", `[{"op":"add","path":"/rules/-","value":{"apiGroups":["example.com"],"resources":["widgets"],"verbs":["get"]}}]`)
	a.kubectl("delete", "clusterrolebinding", "system:discovery")
	if err := a.stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, a.log)
	}
	a = startAllInOne(t, dataDir)
	mustContain(t, a.kubectl("get", "clusterrole", "system:aggregate-to-edit", "-o", "yaml"), "widgets")
	a.eventually(t, "edit aggregates the addition", 30*time.Second, func(out string, err error) bool { return err == nil && strings.Contains(out, "widgets") },
		"get", "clusterrole", "edit", "-o", "yaml")
	mustContain(t, a.kubectl("get", "clusterrolebinding", "system:discovery"), "system:discovery")
}
