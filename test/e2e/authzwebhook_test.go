package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"

	"github.com/gcp-project/gcp/test/poll"
)

// sarWebhookEnv, when set, makes the e2e test binary a SubjectAccessReview
// webhook instead of running tests: the webhook is a process of its own,
// which a test can SIGKILL. Its value is a directory where the webhook
// writes webhook.kubeconfig (its address and throwaway CA) once it serves.
const sarWebhookEnv = "GCP_E2E_SAR_WEBHOOK_DIR"

func init() {
	// Before TestMain: a webhook process builds nothing and runs no test.
	if dir := os.Getenv(sarWebhookEnv); dir != "" {
		if err := serveSARWebhook(dir); err != nil {
			fmt.Fprintln(os.Stderr, "SubjectAccessReview webhook:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// serveSARWebhook answers SubjectAccessReviews by a simple rule: user
// webhook-friend is allowed anything, webhook-foe denied configmaps, and
// anything else gets no opinion. GET /count says how many reviews it answered.
func serveSARWebhook(dir string) error {
	cert, caPEM, err := selfSigned()
	if err != nil {
		return err
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		return err
	}
	var reviews, tokenReviews atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /count", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, reviews.Load())
	})
	mux.HandleFunc("GET /tokencount", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, tokenReviews.Load())
	})
	mux.HandleFunc("POST /tokenreview", func(w http.ResponseWriter, r *http.Request) {
		tokenReviews.Add(1)
		serveTokenReview(w, r)
	})
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		reviews.Add(1)
		var review authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch {
		case review.Spec.User == "webhook-friend":
			review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "a friend of the webhook"}
		case review.Spec.User == "webhook-foe" && review.Spec.ResourceAttributes != nil && review.Spec.ResourceAttributes.Resource == "configmaps":
			review.Status = authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "a foe of the webhook"}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	})
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: webhook
  cluster:
    server: https://%s/
    certificate-authority-data: %s
users:
- name: apiserver
contexts:
- name: webhook
  context: {cluster: webhook, user: apiserver}
current-context: webhook
`, l.Addr(), base64.StdEncoding.EncodeToString(caPEM))
	if err := os.WriteFile(filepath.Join(dir, "tokenreview.kubeconfig"),
		[]byte(strings.Replace(kubeconfig, "server: https://"+l.Addr().String()+"/", "server: https://"+l.Addr().String()+"/tokenreview", 1)), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "webhook.kubeconfig.tmp"), []byte(kubeconfig), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), caPEM, 0o600); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, "webhook.kubeconfig.tmp"), filepath.Join(dir, "webhook.kubeconfig")); err != nil {
		return err
	}
	return http.Serve(l, mux)
}

// selfSigned returns a throwaway certificate for 127.0.0.1, signed by a CA
// of its own, and the PEM a client trusts it by (the certificate and its CA).
func selfSigned() (tls.Certificate, []byte, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	return cert, certPEM, err
}

// sarWebhook is a running webhook process.
type sarWebhook struct {
	proc       *process
	kubeconfig string
	client     *http.Client
	url        string
}

// startSARWebhook runs the test binary as a webhook and waits until it
// serves.
func startSARWebhook(t *testing.T) *sarWebhook {
	t.Helper()
	dir := t.TempDir()
	p := &process{cmd: exec.Command(os.Args[0]), log: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), sarWebhookEnv+"="+dir)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.done })
	w := &sarWebhook{proc: p, kubeconfig: filepath.Join(dir, "webhook.kubeconfig")}
	poll.Until(t, 50*time.Millisecond, 30*time.Second, func() error {
		if _, err := os.Stat(w.kubeconfig); err == nil {
			return nil
		}
		select {
		case <-p.done:
			t.Fatalf("the webhook exited:\n%s", p.log)
		default:
		}
		return fmt.Errorf("the webhook is not serving:\n%s", p.log)
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", w.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	w.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	w.url = strings.TrimSuffix(cfg.Host, "/")
	return w
}

// reviews is how many SubjectAccessReviews the webhook has answered.
func (w *sarWebhook) reviews(t *testing.T) int {
	t.Helper()
	return w.count(t, "/count")
}

// tokenReviews is how many TokenReviews the webhook has answered.
func (w *sarWebhook) tokenReviews(t *testing.T) int {
	t.Helper()
	return w.count(t, "/tokencount")
}

func (w *sarWebhook) count(t *testing.T, path string) int {
	t.Helper()
	resp, err := w.client.Get(w.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var n int
	if _, err := fmt.Fscan(resp.Body, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// kill SIGKILLs the webhook.
func (w *sarWebhook) kill() {
	_ = w.proc.cmd.Process.Signal(syscall.SIGKILL)
	<-w.proc.done
}

// authorizationConfig is an AuthorizationConfiguration: the webhook
// "policy-service" with failurePolicy, asked about anyone but system
// users (gcp's own controllers) and user skip-me, then RBAC.
func authorizationConfig(kubeconfig, failurePolicy string) string {
	return fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: policy-service
  webhook:
    timeout: 5s
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
    matchConditions:
    - expression: "!request.user.startsWith('system:')"
    - expression: "request.user != 'skip-me'"
- type: RBAC
  name: rbac
`, failurePolicy, kubeconfig)
}

// writeFileAtomically replaces path as an editor or a ConfigMap volume
// does: a new file renamed over it.
func writeFileAtomically(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// as returns a client of the admin kubeconfig impersonating user.
func as(t *testing.T, kubeconfig, user string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate.UserName = user
	cfg.Timeout = 30 * time.Second
	return kubernetes.NewForConfigOrDie(cfg)
}

// listConfigMaps lists configmaps in default as user and returns the
// HTTP status (200 on success) and the error.
func listConfigMaps(t *testing.T, kubeconfig, user string) (int, error) {
	t.Helper()
	_, err := as(t, kubeconfig, user).CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
	if err == nil {
		return http.StatusOK, nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return int(status.Status().Code), err
	}
	t.Fatalf("listing configmaps as %s: %v", user, err)
	return 0, err
}

// TestAuthorizationWebhook runs gcp start with an AuthorizationConfiguration
// whose webhook is a process of its own: the chain's order, matchConditions,
// caching, kubectl auth can-i, failurePolicy Deny with the webhook killed
// (403 naming it, not kube-apiserver's 500), a reload to NoOpinion without
// a restart (RBAC decides), a bad file on reload (kept, logged, counted),
// and the metrics.
func TestAuthorizationWebhook(t *testing.T) {
	t.Parallel()
	hook := startSARWebhook(t)
	configPath := filepath.Join(t.TempDir(), "authz.yaml")
	writeFileAtomically(t, configPath, authorizationConfig(hook.kubeconfig, "Deny"))
	a := startAllInOne(t, t.TempDir(), "--authorization-config", configPath)
	kubeconfig := a.kubeconfig()
	a.kubectl("create", "rolebinding", "readers", "--clusterrole=view", "--user=webhook-foe", "--user=skip-me", "--user=rbac-user", "-n", "default")

	// kubectl auth can-i (a SelfSubjectAccessReview) sees the webhook.
	if out := a.kubectl("--as=webhook-friend", "auth", "can-i", "create", "configmaps", "-n", "default"); strings.TrimSpace(out) != "yes" {
		t.Errorf("can-i as the webhook's friend: %q, want yes", out)
	}
	if out, _ := a.kubectlErr("--as=webhook-foe", "auth", "can-i", "get", "configmaps", "-n", "default"); !strings.HasPrefix(strings.TrimSpace(out), "no") {
		t.Errorf("can-i as the webhook's foe: %q, want no", out)
	}

	// Order: the webhook's deny comes before RBAC's allow.
	if code, err := listConfigMaps(t, kubeconfig, "webhook-foe"); code != http.StatusForbidden || !strings.Contains(err.Error(), "a foe of the webhook") {
		t.Errorf("webhook-foe, whom RBAC allows: %d %v, want 403 from the webhook", code, err)
	}
	// The webhook allows what RBAC does not.
	if code, err := listConfigMaps(t, kubeconfig, "webhook-friend"); code != http.StatusOK {
		t.Errorf("webhook-friend: %d %v", code, err)
	}
	// Caching: the same request again does not reach the webhook within
	// authorizedTTL.
	before := hook.reviews(t)
	if code, err := listConfigMaps(t, kubeconfig, "webhook-friend"); code != http.StatusOK {
		t.Errorf("webhook-friend again: %d %v", code, err)
	}
	if after := hook.reviews(t); after != before {
		t.Errorf("the webhook answered %d reviews for a request it allowed within authorizedTTL", after-before)
	}
	// matchConditions: skip-me never reaches the webhook; RBAC allows.
	before = hook.reviews(t)
	if code, err := listConfigMaps(t, kubeconfig, "skip-me"); code != http.StatusOK {
		t.Errorf("skip-me: %d %v", code, err)
	}
	if after := hook.reviews(t); after != before {
		t.Errorf("the webhook was asked about skip-me, whom its matchConditions exclude")
	}

	// The webhook is killed: failurePolicy Deny forbids, naming it.
	hook.kill()
	code, err := listConfigMaps(t, kubeconfig, "rbac-user")
	if code != http.StatusForbidden || !strings.Contains(err.Error(), `authorizer "policy-service": webhook unreachable`) {
		t.Fatalf("rbac-user with the webhook down and failurePolicy Deny: %d %v, want 403 naming the authorizer", code, err)
	}
	// system:masters is not asked.
	a.kubectl("get", "configmaps", "-n", "default")

	// Reloaded without a restart: failurePolicy NoOpinion, so RBAC decides.
	writeFileAtomically(t, configPath, authorizationConfig(hook.kubeconfig, "NoOpinion"))
	poll.Until(t, 200*time.Millisecond, 90*time.Second, func() error {
		code, err := listConfigMaps(t, kubeconfig, "rbac-user")
		switch code {
		case http.StatusOK:
			return nil
		case http.StatusForbidden:
			return fmt.Errorf("the changed authorization file is not in place: %v\n%s", err, a.log)
		}
		t.Fatalf("rbac-user while the file is reloaded: %d %v", code, err)
		return nil
	})
	// NoOpinion falls through: someone RBAC does not allow is forbidden,
	// and told why.
	if code, err := listConfigMaps(t, kubeconfig, "stranger"); code != http.StatusForbidden || !strings.Contains(err.Error(), "policy-service: webhook unreachable") {
		t.Errorf("stranger with the webhook down and failurePolicy NoOpinion: %d %v, want 403", code, err)
	}

	// A bad file is refused: the chain in place stays, the log and the
	// metrics say so.
	writeFileAtomically(t, configPath, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: Node\n  name: node\n")
	poll.Until(t, 200*time.Millisecond, 90*time.Second, func() error {
		if !strings.Contains(a.kubectl("get", "--raw", "/metrics"), `status="failure"}`) {
			return fmt.Errorf("no failed reload counted:\n%s", a.log)
		}
		return nil
	})
	if code, err := listConfigMaps(t, kubeconfig, "rbac-user"); code != http.StatusOK {
		t.Errorf("rbac-user after a refused reload: %d %v", code, err)
	}
	metrics := a.kubectl("get", "--raw", "/metrics")
	if err := a.stop(); err != nil {
		t.Errorf("gcp start: %v", err)
	}
	if log := a.log.String(); !strings.Contains(log, "The changed configuration file is not valid") || !strings.Contains(log, "gcp has no nodes") {
		t.Errorf("the log does not say the changed file was refused, and why:\n%s", log)
	}
	for _, want := range []string{
		`apiserver_authorization_config_controller_automatic_reloads_total{apiserver_id_hash=`,
		`status="success"}`,
		`status="failure"}`,
		`apiserver_authorization_decisions_total{decision="denied",name="policy-service",type="Webhook"}`,
		`apiserver_authorization_decisions_total{decision="allowed",name="rbac",type="RBAC"}`,
		`apiserver_authorization_webhook_evaluations_total{name="policy-service",result="success"}`,
		`apiserver_authorization_webhook_evaluations_fail_open_total{name="policy-service",result="error"}`,
		`apiserver_authorization_match_condition_exclusions_total{name="policy-service",type="Webhook"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}

// TestBadAuthorizationConfigurationIsOneLine: a configuration gcp cannot
// run stops gcp start (and gcp apiserver) with one line naming the file
// or flag and the field, exit 1, and nothing on disk.
func TestBadAuthorizationConfigurationIsOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string { return writeFile(t, dir, name, content) }
	header := "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n"
	malformed := write("malformed.yaml", header+"- type: [\n")
	node := write("node.yaml", header+"- type: Node\n  name: node\n")
	noKubeconfig := write("nokubeconfig.yaml", strings.Replace(authorizationConfig("/no/such/webhook.kubeconfig", "Deny"), "- type: RBAC\n  name: rbac\n", "", 1))
	badCEL := write("cel.yaml", strings.Replace(authorizationConfig(write("k", "apiVersion: v1\nkind: Config\n"), "Deny"),
		"request.user != 'skip-me'", "request.user ==", 1))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--authorization-config", malformed}, malformed},
		{[]string{"--authorization-config", node}, "authorizers[0].type: Invalid value"},
		{[]string{"--authorization-config", noKubeconfig}, "authorizers[0].connectionInfo.kubeConfigFile"},
		{[]string{"--authorization-config", badCEL}, "authorizers[0].matchConditions[1].expression"},
		{[]string{"--authorization-config", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"--authorization-config", node, "--authorization-mode", "RBAC"}, "--authorization-config can not be specified when --authorization-mode"},
		{[]string{"--authorization-mode", "Node,RBAC"}, "--authorization-mode Node: gcp has no nodes"},
		{[]string{"--authorization-mode", "ABAC"}, "--authorization-mode ABAC"},
		{[]string{"--authorization-mode", "Webhook"}, "--authorization-mode Webhook needs --authorization-webhook-config-file"},
		{[]string{"--authorization-mode", "RBAC", "--authorization-webhook-config-file", "/no/such"}, "without mode Webhook"},
	} {
		wantStartRefused(t, tc.want, tc.args...)
	}
}

// TestAuthorizationWebhookSplit runs `gcp apiserver` of the split shape
// with kube-apiserver's older flags, --authorization-mode=Webhook,RBAC and
// --authorization-webhook-*: the webhook decides before RBAC, and once it
// is killed its failurePolicy (NoOpinion, as upstream gives these flags)
// lets RBAC decide, with 403, never 500, for whom RBAC does not allow.
func TestAuthorizationWebhookSplit(t *testing.T) {
	t.Parallel()
	hook := startSARWebhook(t)
	c := newEtcdCluster(t, 1)
	port := freePort(t)
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	proc := startProcess(t, c.apiserverArgs(port, c.etcdURLs, "--authorization-mode", "Webhook,RBAC",
		"--authorization-webhook-config-file", hook.kubeconfig, "--authorization-webhook-version", "v1")...)
	admin := filepath.Join(c.base, "admin.kubeconfig")
	client := func(user string) kubernetes.Interface {
		cfg, err := clientcmd.BuildConfigFromFlags(server, admin)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Impersonate.UserName = user
		cfg.Timeout = 30 * time.Second
		return kubernetes.NewForConfigOrDie(cfg)
	}
	poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
		_, err := client("").Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err != nil {
			return fmt.Errorf("%v\n%s", err, proc.log)
		}
		return nil
	})
	ctx := context.Background()
	list := func(user string) error {
		_, err := client(user).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err
	}
	if _, err := client("").RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "readers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "webhook-foe"}, {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "rbac-user"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := list("webhook-friend"); err != nil {
		t.Errorf("webhook-friend: %v", err)
	}
	if err := list("webhook-foe"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "a foe of the webhook") {
		t.Errorf("webhook-foe, whom RBAC allows: %v, want the webhook's 403", err)
	}
	hook.kill()
	if err := list("rbac-user"); err != nil {
		t.Errorf("rbac-user with the webhook down (failurePolicy NoOpinion): %v, want RBAC's allow", err)
	}
	if err := list("stranger"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "default: webhook unreachable") {
		t.Errorf("stranger with the webhook down: %v, want 403 saying the webhook is unreachable", err)
	}
}
