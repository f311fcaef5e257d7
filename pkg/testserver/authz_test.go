package testserver

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/authz"
)

// TestAuthorizationAsGoValues: a test gives the server its own Go
// authorizer and an AuthorizationConfiguration as a Go value. The Go
// authorizer decides first; a webhook nobody answers, with failurePolicy
// Deny, forbids the rest with a 403 naming it (kube-apiserver answers
// 500); SubjectAccessReviews say the same.
func TestAuthorizationAsGoValues(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "https://" + l.Addr().String()
	_ = l.Close()
	kubeconfig := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: w\n  cluster: {server: "+down+"}\n"+
		"contexts:\n- name: w\n  context: {cluster: w, user: w}\nusers:\n- name: w\ncurrent-context: w\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	robotsOnly := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser().GetName() == "robot" && a.GetVerb() == "list" && a.GetResource() == "configmaps" {
			return authorizer.DecisionAllow, "robots may list configmaps", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	s := Start(t, Options{
		Authorizers: []authz.Named{{Name: "team-policy", Authorizer: robotsOnly}},
		Authorization: &apiserverapi.AuthorizationConfiguration{Authorizers: []apiserverapi.AuthorizerConfiguration{
			{Type: apiserverapi.TypeWebhook, Name: "policy-service", Webhook: &apiserverapi.WebhookConfiguration{
				Timeout:                    metav1.Duration{Duration: 3 * time.Second},
				AuthorizedTTL:              metav1.Duration{Duration: time.Minute},
				UnauthorizedTTL:            metav1.Duration{Duration: time.Second},
				SubjectAccessReviewVersion: "v1",
				FailurePolicy:              apiserverapi.FailurePolicyDeny,
				ConnectionInfo:             apiserverapi.WebhookConnectionInfo{Type: apiserverapi.AuthorizationWebhookConnectionInfoTypeKubeConfigFile, KubeConfigFile: &kubeconfig},
			}},
			{Type: authz.TypeRBAC, Name: "rbac"},
		}},
	})
	ctx := context.Background()
	as := func(user string) kubernetes.Interface {
		cfg := rest.CopyConfig(s.AdminConfig)
		cfg.Impersonate.UserName = user
		return kubernetes.NewForConfigOrDie(cfg)
	}

	if _, err := as("robot").CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("robot, whom the test's authorizer allows: %v", err)
	}
	_, err = as("alice").CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `authorizer "policy-service": webhook unreachable`) {
		t.Errorf("alice with the webhook down and failurePolicy Deny: %v, want 403 naming the authorizer", err)
	}

	review := func(user string) authorizationv1.SubjectAccessReviewStatus {
		t.Helper()
		sar, err := s.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "list", Resource: "configmaps"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sar.Status
	}
	if st := review("robot"); !st.Allowed {
		t.Errorf("SubjectAccessReview for robot: %+v", st)
	}
	if st := review("alice"); st.Allowed || !st.Denied || !strings.Contains(st.Reason, "policy-service") {
		t.Errorf("SubjectAccessReview for alice: %+v, want denied naming the webhook", st)
	}
}
