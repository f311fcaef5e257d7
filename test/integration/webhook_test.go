package integration

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// whServer is an HTTPS admission webhook server on loopback. Each path is
// one webhook; calls counts the requests it got.
type whServer struct {
	*httptest.Server
	calls atomic.Int64
}

// whReview answers one AdmissionReview with decide.
func whReview(w http.ResponseWriter, r *http.Request, decide func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	resp := decide(review.Request)
	resp.UID = review.Request.UID
	review.Response = resp
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// whStart serves the webhooks of the tests:
//
//	/deny-labelled  denies objects labelled deny=true, with a message
//	/add-label      patches in label mutated=yes
//	/slow           answers after 3s
//	/garbage        answers with something that is not an AdmissionReview
func whStart(t testing.TB) *whServer {
	t.Helper()
	s := &whServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/deny-labelled", func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		whReview(w, r, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			var obj metav1.PartialObjectMetadata
			_ = json.Unmarshal(req.Object.Raw, &obj)
			if obj.Labels["deny"] == "true" {
				return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "labelled deny"}}
			}
			return &admissionv1.AdmissionResponse{Allowed: true}
		})
	})
	mux.HandleFunc("/add-label", func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		whReview(w, r, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			var obj metav1.PartialObjectMetadata
			_ = json.Unmarshal(req.Object.Raw, &obj)
			op := "add"
			patch := `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`
			if obj.Labels != nil {
				patch = fmt.Sprintf(`[{"op":%q,"path":"/metadata/labels/mutated","value":"yes"}]`, op)
			}
			pt := admissionv1.PatchTypeJSONPatch
			return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: &pt}
		})
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
		whReview(w, r, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: true}
		})
	})
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		_, _ = w.Write([]byte("this is not an admission review"))
	})
	s.Server = httptest.NewTLSServer(mux)
	t.Cleanup(s.Close)
	return s
}

// clientConfig points a webhook at path on the server, trusting its cert.
func (s *whServer) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(s.URL + path), CABundle: ca}
}

// whConfigMapRules match creating and updating configmaps.
func whConfigMapRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
}

// whValidating is a validating webhook on configmaps in namespaces
// labelled webhook=<nsLabel>.
func whValidating(name string, cc admissionregistrationv1.WebhookClientConfig, nsLabel string, policy admissionregistrationv1.FailurePolicyType) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		ClientConfig:            cc,
		Rules:                   whConfigMapRules(),
		FailurePolicy:           &policy,
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          ptr.To[int32](1),
		NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"webhook": nsLabel}},
	}
}

// whNamespace creates a namespace labelled webhook=label.
func whNamespace(t *testing.T, c kubernetes.Interface, name, label string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"webhook": label}}}
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// whEventually retries create until check accepts its outcome: admission
// plugins see a new configuration through an informer, a moment after
// the write.
func whEventually(t *testing.T, what string, create func(name string) error, check func(err error) bool) {
	t.Helper()
	var last error
	i := 0
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		i++
		last = create(fmt.Sprintf("probe-%d", i))
		return check(last), nil
	})
	if err != nil {
		t.Fatalf("%s: last result %v", what, last)
	}
}

func whCreateConfigMap(c kubernetes.Interface, ns, name string, labels map[string]string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	return c.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
}

// TestValidatingWebhook: a validating webhook over HTTPS denies what it
// must with its own message, only in namespaces its selector matches and
// only for objects its match condition selects, and nothing denied is
// stored.
func TestValidatingWebhook(t *testing.T) {
	s := startGeneric(t)
	wh := whStart(t)
	ctx := context.Background()
	whNamespace(t, s.Client, "wh-on", "on")
	whNamespace(t, s.Client, "wh-off", "off")

	hook := whValidating("deny.labelled.example.com", wh.clientConfig("/deny-labelled"), "on", admissionregistrationv1.Fail)
	// Leave configmaps named keep-* alone, whatever their labels.
	hook.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-keep", Expression: `!object.metadata.name.startsWith("keep-")`}}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-labelled"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{hook},
	}
	if _, err := s.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deny := map[string]string{"deny": "true"}
	whEventually(t, "webhook denies a labelled configmap", func(name string) error {
		_, err := whCreateConfigMap(s.Client, "wh-on", name, deny)
		return err
	}, func(err error) bool { return apierrors.IsForbidden(err) })

	_, err := whCreateConfigMap(s.Client, "wh-on", "denied", deny)
	want := `admission webhook "deny.labelled.example.com" denied the request: labelled deny`
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want 403 with %q", err, want)
	}
	if _, err := s.Client.CoreV1().ConfigMaps("wh-on").Get(ctx, "denied", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("denied configmap was stored: %v", err)
	}
	if _, err := whCreateConfigMap(s.Client, "wh-on", "allowed", nil); err != nil {
		t.Fatalf("unlabelled configmap: %v", err)
	}
	calls := wh.calls.Load()
	if _, err := whCreateConfigMap(s.Client, "wh-on", "keep-me", deny); err != nil {
		t.Fatalf("match condition should exclude keep-*: %v", err)
	}
	if _, err := whCreateConfigMap(s.Client, "wh-off", "elsewhere", deny); err != nil {
		t.Fatalf("namespace selector should exclude wh-off: %v", err)
	}
	if got := wh.calls.Load(); got != calls {
		t.Fatalf("webhook called %d times for requests it does not match", got-calls)
	}
}

// TestMutatingWebhook: a mutating webhook's JSON patch is applied to the
// stored object.
func TestMutatingWebhook(t *testing.T) {
	s := startGeneric(t)
	wh := whStart(t)
	ctx := context.Background()
	whNamespace(t, s.Client, "mwh", "on")
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "add-label"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "add.label.example.com",
			ClientConfig:            wh.clientConfig("/add-label"),
			Rules:                   whConfigMapRules(),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"webhook": "on"}},
		}},
	}
	if _, err := s.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	whEventually(t, "webhook labels a configmap", func(name string) error {
		cm, err := whCreateConfigMap(s.Client, "mwh", name, map[string]string{"a": "b"})
		if err != nil {
			return err
		}
		if cm.Labels["mutated"] != "yes" {
			return fmt.Errorf("labels %v", cm.Labels)
		}
		return nil
	}, func(err error) bool { return err == nil })
	cm, err := whCreateConfigMap(s.Client, "mwh", "unlabelled", nil)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.Client.CoreV1().ConfigMaps("mwh").Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil || stored.Labels["mutated"] != "yes" {
		t.Fatalf("stored configmap labels %v, err %v; want mutated=yes", stored.Labels, err)
	}
}

// TestWebhookFailurePolicy: a webhook that times out, answers garbage or
// cannot be reached rejects the request under failurePolicy Fail, with
// upstream's message and status, and lets it through under Ignore.
func TestWebhookFailurePolicy(t *testing.T) {
	s := startGeneric(t)
	wh := whStart(t)
	ctx := context.Background()
	closed := httptest.NewTLSServer(http.NotFoundHandler())
	unreachable := admissionregistrationv1.WebhookClientConfig{URL: ptr.To(closed.URL + "/gone")}
	closed.Close()

	cases := []struct {
		name string
		cc   admissionregistrationv1.WebhookClientConfig
		want string
	}{
		{"slow", wh.clientConfig("/slow"), "context deadline exceeded"},
		{"garbage", wh.clientConfig("/garbage"), "failed calling webhook"},
		{"unreachable", unreachable, "failed calling webhook"},
	}
	var hooks []admissionregistrationv1.ValidatingWebhook
	for _, c := range cases {
		for _, p := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
			label := c.name + "-" + strings.ToLower(string(p))
			whNamespace(t, s.Client, "fp-"+label, label)
			hooks = append(hooks, whValidating(label+".example.com", c.cc, label, p))
		}
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "failing"}, Webhooks: hooks}
	if _, err := s.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fail := "fp-" + c.name + "-fail"
			whEventually(t, "Fail rejects", func(name string) error {
				_, err := whCreateConfigMap(s.Client, fail, name, nil)
				return err
			}, func(err error) bool { return err != nil })
			_, err := whCreateConfigMap(s.Client, fail, "x", nil)
			want := fmt.Sprintf(`failed calling webhook "%s-fail.example.com"`, c.name)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Fail: got %v, want an error with %q and %q", err, want, c.want)
			}
			// Upstream's outcome, documented in docs/admission.md: the
			// failure is the webhook's, not the client's, and kube-apiserver
			// reports it as an internal error.
			if !apierrors.IsInternalError(err) {
				t.Fatalf("Fail: got %v (%s), want upstream's internal error", err, apierrors.ReasonForError(err))
			}
			if _, err := s.Client.CoreV1().ConfigMaps(fail).Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("rejected configmap was stored: %v", err)
			}
			if _, err := whCreateConfigMap(s.Client, "fp-"+c.name+"-ignore", "x", nil); err != nil {
				t.Fatalf("Ignore: %v", err)
			}
		})
	}
}
