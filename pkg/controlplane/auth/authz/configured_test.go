package authz

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// sarServer is a SubjectAccessReview webhook on real HTTPS: it allows
// user "webhook-friend", denies "webhook-foe", has no opinion on anyone
// else, and counts the reviews it answers.
type sarServer struct {
	*httptest.Server
	reviews atomic.Int32
}

func newSARServer(t *testing.T) *sarServer {
	s := &sarServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.reviews.Add(1)
		var review authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch review.Spec.User {
		case "webhook-friend":
			review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "a friend"}
		case "webhook-foe":
			review.Status = authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "a foe"}
		}
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(s.Close)
	return s
}

// kubeconfig writes a kubeconfig that calls server (trusting its
// certificate) and returns its path.
func writeKubeconfig(t *testing.T, server string, ca []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: webhook
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: apiserver
contexts:
- name: webhook
  context: {cluster: webhook, user: apiserver}
current-context: webhook
`, server, encodeBase64(ca))
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (s *sarServer) kubeconfig(t *testing.T) string {
	return writeKubeconfig(t, s.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}))
}

// downKubeconfig is a kubeconfig for a webhook nobody listens for.
func downKubeconfig(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	s := httptest.NewTLSServer(http.NotFoundHandler())
	defer s.Close()
	return writeKubeconfig(t, "https://"+addr, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}))
}

func webhookYAML(name, kubeconfig, failurePolicy, extra string) string {
	return fmt.Sprintf(`
- type: Webhook
  name: %s
  webhook:
    timeout: 3s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: %s
    authorizedTTL: 5m
    unauthorizedTTL: 30s
    cacheAuthorizedRequests: true
    cacheUnauthorizedRequests: true
    connectionInfo:
      type: KubeConfigFile
      kubeConfigFile: %s
%s`, name, failurePolicy, kubeconfig, extra)
}

func config(authorizers ...string) []byte {
	return []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:" + strings.Join(authorizers, ""))
}

const (
	rbacYAML        = "\n- type: RBAC\n  name: rbac\n"
	alwaysAllowYAML = "\n- type: AlwaysAllow\n  name: alwaysallow\n"
	alwaysDenyYAML  = "\n- type: AlwaysDeny\n  name: alwaysdeny\n"
)

func mustBuild(t *testing.T, b Builder, data []byte) *Reloadable {
	t.Helper()
	cfg, err := LoadData(data)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReloadable(b, cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func who(name string) user.Info {
	return &user.DefaultInfo{Name: name, Groups: []string{user.AllAuthenticated}}
}

func decide(t *testing.T, a authorizer.Authorizer, u user.Info) (authorizer.Decision, string) {
	t.Helper()
	d, reason, err := a.Authorize(context.Background(), resource(u))
	if err != nil {
		t.Fatalf("%s: an error reached the chain's caller, which answers 500: %v (decision %v, reason %q)", u.GetName(), err, d, reason)
	}
	return d, reason
}

func TestValidationErrorsNameTheField(t *testing.T) {
	t.Parallel()
	sar := newSARServer(t)
	good := sar.kubeconfig(t)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"not YAML", []byte("authorizers: [\n"), "yaml"},
		{"unknown field", []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizerz: []\n"), `unknown field "authorizerz"`},
		{"no authorizers", config(), "authorizers: Required value"},
		{"Node", config("\n- type: Node\n  name: node\n"), "authorizers[0].type: Invalid value: \"Node\": gcp has no nodes"},
		{"ABAC", config(rbacYAML, "\n- type: ABAC\n  name: abac\n"), "authorizers[1].type: Invalid value: \"ABAC\": gcp has no ABAC"},
		{"unknown type", config("\n- type: Magic\n  name: magic\n"), "authorizers[0].type: Unsupported value: \"Magic\""},
		{"RBAC misnamed", config("\n- type: RBAC\n  name: my-rbac\n"), "authorizers[0].name: Invalid value: \"my-rbac\""},
		{"RBAC twice", config(rbacYAML, rbacYAML), "authorizers[1].type: Duplicate value"},
		{"CEL that does not compile", config(webhookYAML("policy", good, "Deny", "    matchConditions:\n    - expression: request.nosuchfield ==\n")),
			"authorizers[0].matchConditions[0].expression"},
		{"CEL that is not a bool", config(webhookYAML("policy", good, "Deny", "    matchConditions:\n    - expression: request.user\n")),
			"authorizers[0].matchConditions[0].expression"},
		{"missing kubeconfig", config(webhookYAML("policy", "/no/such/webhook.kubeconfig", "Deny", "")),
			"authorizers[0].connectionInfo.kubeConfigFile: Invalid value: \"/no/such/webhook.kubeconfig\""},
		{"relative kubeconfig", config(webhookYAML("policy", "webhook.kubeconfig", "Deny", "")), "must be an absolute path"},
		{"failurePolicy", config(webhookYAML("policy", good, "Allow", "")), "authorizers[0].failurePolicy: Unsupported value: \"Allow\""},
		{"timeout", config(strings.Replace(webhookYAML("policy", good, "Deny", ""), "timeout: 3s", "timeout: 1m", 1)), "authorizers[0].timeout: Invalid value: \"1m0s\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadData(tc.data)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}

	// A kubeconfig that exists but does not load.
	bad := filepath.Join(t.TempDir(), "bad.kubeconfig")
	if err := os.WriteFile(bad, []byte("clusters: {"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadData(config(webhookYAML("policy", bad, "Deny", ""))); err == nil || !strings.Contains(err.Error(), "authorizers[0].webhook.connectionInfo") {
		t.Errorf("a kubeconfig that does not load: %v", err)
	}
}

// TestConfiguredChainOrder: system:masters first, then the control
// plane's own authorizers other than RBAC, then the configured ones in
// order, RBAC where the configuration puts it.
func TestConfiguredChainOrder(t *testing.T) {
	t.Parallel()
	own := []Named{
		{Name: rbacName, Authorizer: allowOnly("rbac-user")},
		{Name: "layer", Authorizer: allowOnly("layer-user")},
	}
	b := Builder{Own: own}
	for _, tc := range []struct {
		name  string
		data  []byte
		allow []string
		deny  []string
	}{
		{"RBAC then AlwaysDeny", config(rbacYAML, alwaysDenyYAML), []string{"admin", "rbac-user", "layer-user"}, []string{"someone"}},
		// AlwaysDeny has no opinion, as upstream's: the next one decides.
		{"AlwaysDeny then RBAC", config(alwaysDenyYAML, rbacYAML), []string{"admin", "layer-user", "rbac-user"}, []string{"someone"}},
		{"AlwaysAllow", config(alwaysAllowYAML), []string{"admin", "rbac-user", "layer-user", "someone"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustBuild(t, b, tc.data)
			for _, name := range tc.allow {
				u := who(name)
				if name == "admin" {
					u = master
				}
				if d, reason := decide(t, r, u); d != authorizer.DecisionAllow {
					t.Errorf("%s: %v (%s), want allowed", name, d, reason)
				}
			}
			for _, name := range tc.deny {
				if d, reason := decide(t, r, who(name)); d == authorizer.DecisionAllow {
					t.Errorf("%s: %v (%s), want not allowed", name, d, reason)
				}
			}
		})
	}

	// RBAC in the configuration needs the control plane's RBAC.
	cfg, err := LoadData(config(rbacYAML))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewReloadable(Builder{Own: own[1:]}, cfg, "test"); err == nil || !strings.Contains(err.Error(), "authorizers[0].type") {
		t.Errorf("RBAC configured without an RBAC authorizer: %v", err)
	}
}

// TestWebhookDownIsForbiddenNotInternalError: a webhook nobody answers
// decides by its failurePolicy, and no error reaches WithAuthorization
// (which would answer 500): Deny forbids with a reason naming the
// webhook, NoOpinion lets the next authorizer decide.
func TestWebhookDownIsForbiddenNotInternalError(t *testing.T) {
	t.Parallel()
	down := downKubeconfig(t)
	b := Builder{Own: []Named{{Name: rbacName, Authorizer: allowOnly("rbac-user")}}}

	deny := mustBuild(t, b, config(webhookYAML("policy-service", down, "Deny", ""), rbacYAML))
	d, reason := decide(t, deny, who("rbac-user"))
	if d != authorizer.DecisionDeny || !strings.Contains(reason, `authorizer "policy-service": webhook unreachable`) {
		t.Errorf("failurePolicy Deny, webhook down: %v %q, want denied naming the authorizer", d, reason)
	}
	if d, _ := decide(t, deny, master); d != authorizer.DecisionAllow {
		t.Errorf("system:masters with the webhook down: %v, want allowed", d)
	}

	noOpinion := mustBuild(t, b, config(webhookYAML("policy-service", down, "NoOpinion", ""), rbacYAML))
	if d, reason := decide(t, noOpinion, who("rbac-user")); d != authorizer.DecisionAllow {
		t.Errorf("failurePolicy NoOpinion, webhook down: %v %q, want RBAC's allow", d, reason)
	}
	d, reason = decide(t, noOpinion, who("someone"))
	if d == authorizer.DecisionAllow || !strings.Contains(reason, "policy-service: webhook unreachable") {
		t.Errorf("failurePolicy NoOpinion, webhook down, RBAC silent: %v %q, want forbidden saying why", d, reason)
	}
}

// TestWebhookDecidesMatchesAndCaches: a webhook on real HTTPS decides in
// its place in the chain, is skipped when a matchCondition is false, and
// is not asked again for a decision it gave within authorizedTTL.
func TestWebhookDecidesMatchesAndCaches(t *testing.T) {
	t.Parallel()
	sar := newSARServer(t)
	b := Builder{Own: []Named{{Name: rbacName, Authorizer: allowOnly("webhook-foe")}}}
	r := mustBuild(t, b, config(webhookYAML("policy-service", sar.kubeconfig(t), "Deny",
		"    matchConditions:\n    - expression: \"request.user != 'skip-me'\"\n"), rbacYAML))

	if d, reason := decide(t, r, who("webhook-friend")); d != authorizer.DecisionAllow || reason != "a friend" {
		t.Errorf("friend: %v %q", d, reason)
	}
	if d, reason := decide(t, r, who("webhook-foe")); d != authorizer.DecisionDeny || reason != "a foe" {
		t.Errorf("foe (allowed by RBAC, which comes later): %v %q, want the webhook's deny", d, reason)
	}
	asked := sar.reviews.Load()
	if d, _ := decide(t, r, who("webhook-friend")); d != authorizer.DecisionAllow {
		t.Errorf("friend again: %v", d)
	}
	if got := sar.reviews.Load(); got != asked {
		t.Errorf("the webhook was asked again within authorizedTTL (%d reviews, then %d)", asked, got)
	}
	if d, _ := decide(t, r, who("skip-me")); d == authorizer.DecisionAllow {
		t.Errorf("skip-me allowed")
	}
	if got := sar.reviews.Load(); got != asked {
		t.Errorf("the webhook was asked about a request its matchConditions exclude")
	}
}

// TestReload: a changed configuration replaces the chain; one that does
// not load, or drops a type other than Webhook, leaves it in place.
func TestReload(t *testing.T) {
	t.Parallel()
	b := Builder{Own: []Named{{Name: rbacName, Authorizer: allowOnly("rbac-user")}}}
	r := mustBuild(t, b, config(rbacYAML))
	if d, _ := decide(t, r, who("someone")); d == authorizer.DecisionAllow {
		t.Fatal("someone allowed by RBAC alone")
	}
	if err := r.Reload(config(rbacYAML, alwaysAllowYAML)); err != nil {
		t.Fatal(err)
	}
	if d, _ := decide(t, r, who("someone")); d != authorizer.DecisionAllow {
		t.Error("the reloaded AlwaysAllow is not in place")
	}
	for _, bad := range [][]byte{[]byte("nonsense: ["), config(alwaysAllowYAML)} {
		if err := r.Reload(bad); err == nil {
			t.Errorf("reload of %q accepted", bad)
		}
		if d, _ := decide(t, r, who("someone")); d != authorizer.DecisionAllow {
			t.Errorf("after the refused %q, the chain in place changed", bad)
		}
	}
}

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
