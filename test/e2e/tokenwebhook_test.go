package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// serveTokenReview answers an authentication.k8s.io/v1 TokenReview by a
// simple rule: token opaque-alice is alice, in group webhook-team, with an
// extra value; any other token is not recognised.
func serveTokenReview(w http.ResponseWriter, r *http.Request) {
	var review authenticationv1.TokenReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if review.Spec.Token == "opaque-alice" {
		review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
			Username: "alice", UID: "alice-uid", Groups: []string{"webhook-team"},
			Extra: map[string]authenticationv1.ExtraValue{"example.com/tenant": {"blue"}},
		}}
	} else {
		review.Status = authenticationv1.TokenReviewStatus{Authenticated: false, Error: "unknown token"}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// tokenKubeconfig writes a kubeconfig for cp's server with a bearer token.
func tokenKubeconfig(t *testing.T, cp controlPlane, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "user.kubeconfig")
	data, err := os.ReadFile(cp.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	mustGCP(t, "kubectl", "--kubeconfig", path, "config", "set-credentials", "user", "--token", token)
	mustGCP(t, "kubectl", "--kubeconfig", path, "config", "set-context", "--current", "--user", "user")
	return path
}

// TestTokenWebhook: gcp start asks a TokenReview service, a process of its
// own, about tokens it does not know: who the service says, with groups and
// extra, as kubectl auth whoami shows; an unknown token is 401; answers are
// cached; with the service killed, a cached token still works and a new one
// is 401, never a 500.
func TestTokenWebhook(t *testing.T) {
	t.Parallel()
	hook := startSARWebhook(t)
	a := startAllInOne(t, t.TempDir(),
		"--authentication-token-webhook-config-file", filepath.Join(filepath.Dir(hook.kubeconfig), "tokenreview.kubeconfig"),
		"--authentication-token-webhook-version", "v1")

	alice := tokenKubeconfig(t, a, "opaque-alice")
	out, code := runGCP(t, "kubectl", "--kubeconfig", alice, "auth", "whoami", "-o", "json")
	if code != 0 {
		t.Fatalf("whoami with the webhook's token: exit %d\n%s", code, out)
	}
	for _, want := range []string{`"username": "alice"`, `"uid": "alice-uid"`, `"webhook-team"`, `"system:authenticated"`, `"example.com/tenant"`} {
		if !strings.Contains(out, want) {
			t.Errorf("whoami lacks %s:\n%s", want, out)
		}
	}
	// Recognised but not bound: 403.
	if out, code := runGCP(t, "kubectl", "--kubeconfig", alice, "get", "configmaps"); code == 0 || !strings.Contains(out, "Forbidden") {
		t.Errorf("alice without a binding: exit %d\n%s", code, out)
	}
	a.kubectl("create", "rolebinding", "team-view", "--clusterrole=view", "--group=webhook-team", "-n", "default")
	a.eventually(t, "alice may list configmaps", 30*time.Second, func(_ string, err error) bool { return err == nil },
		"--kubeconfig", alice, "get", "configmaps")

	stranger := tokenKubeconfig(t, a, "opaque-mallory")
	if out, code := runGCP(t, "kubectl", "--kubeconfig", stranger, "get", "configmaps"); code == 0 || !strings.Contains(out, "Unauthorized") {
		t.Errorf("an unknown token: exit %d\n%s", code, out)
	}

	// Cached: more requests with alice's token ask the service no more.
	before := hook.tokenReviews(t)
	for range 3 {
		if out, code := runGCP(t, "kubectl", "--kubeconfig", alice, "get", "configmaps"); code != 0 {
			t.Fatalf("alice: exit %d\n%s", code, out)
		}
	}
	if after := hook.tokenReviews(t); after != before {
		t.Errorf("the service was asked %d more times about a cached token", after-before)
	}

	hook.kill()
	if out, code := runGCP(t, "kubectl", "--kubeconfig", alice, "get", "configmaps"); code != 0 {
		t.Errorf("alice's cached token with the service down: exit %d\n%s", code, out)
	}
	other := tokenKubeconfig(t, a, "opaque-bob")
	out, code = runGCP(t, "kubectl", "--kubeconfig", other, "get", "configmaps")
	if code == 0 || !strings.Contains(out, "Unauthorized") || strings.Contains(out, "InternalError") {
		t.Errorf("a new token with the service down: want 401, got exit %d\n%s", code, out)
	}
}
