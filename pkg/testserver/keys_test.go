package testserver

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
)

// TestServiceAccountKeyMadeOnce: servers of one test binary sign service
// account tokens with one key, made once, yet a token one server issued
// works there and is refused by the other (its CA and issuer are its own).
func TestServiceAccountKeyMadeOnce(t *testing.T) {
	t.Parallel()
	a, b := Start(t, Options{}), Start(t, Options{})
	keyA, err := os.ReadFile(a.PKI.ServiceAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := os.ReadFile(b.PKI.ServiceAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(keyA, keyB) {
		t.Fatal("each server made its own service account key")
	}

	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}
	if _, err := a.Client.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := a.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withToken := func(s *Server) kubernetes.Interface {
		cfg := rest.AnonymousClientConfig(s.AdminConfig)
		cfg.BearerToken = tr.Status.Token
		return kubernetes.NewForConfigOrDie(cfg)
	}
	// Authenticated, not authorized: 403 names the service account.
	_, err = withToken(a).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("the token at the server that issued it: got %v, want 403", err)
	}
	_, err = withToken(b).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("the token at another server: got %v, want 401", err)
	}
}

// TestFailedStartLeavesDataDirEmpty: a start that fails leaves a data dir
// of the caller's as it found it, without the service account key the
// test server wrote there for pki.Ensure.
func TestFailedStartLeavesDataDirEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Run(context.Background(), Options{DataDir: dir, APIServer: func(o *options.Options) {
		o.Admission.EnablePlugins = append(o.Admission.EnablePlugins, "NoSuchPlugin")
	}})
	if err == nil || !strings.Contains(err.Error(), "NoSuchPlugin") {
		t.Fatalf("got %v, want an error naming NoSuchPlugin", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("a failed start left %v in the data dir", names)
	}
}
