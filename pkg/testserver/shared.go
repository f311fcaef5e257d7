package testserver

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RunMain runs a package's tests against one server: it starts the server
// with o, stores it in *s, runs m and stops the server. The server's log
// is printed if a test failed (unless o.LogOutput takes it). Call it from
// TestMain, and give each test a namespace of its own with s.Namespace:
//
//	var server *testserver.Server
//
//	func TestMain(m *testing.M) {
//		os.Exit(testserver.RunMain(m, testserver.Options{Controllers: []string{"*"}}, &server))
//	}
//
//	func TestWidget(t *testing.T) {
//		t.Parallel()
//		ns := server.Namespace(t)
//		...
//	}
//
// One start for hundreds of tests instead of one each; what the tests
// share is the cluster-scoped objects (CRDs, cluster roles, namespaces
// themselves), so a test that changes those wants its own server (Start).
func RunMain(m *testing.M, o Options, s **Server) int {
	server, err := Run(context.Background(), o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the shared test server: %v\n", err)
		return 1
	}
	*s = server
	code := m.Run()
	if err := server.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "the shared test server stopped with error: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if code != 0 && o.LogOutput == nil {
		fmt.Fprintf(os.Stderr, "shared test server log:\n%s", server.Log())
	}
	return code
}

// Namespace creates a namespace for t, named after the test with a random
// suffix, and deletes it when t ends. With the namespace controller
// running (Options.Controllers "*" or "namespace-controller"), what t left in it is
// deleted with it; without, the namespace stays Terminating, as under
// envtest, which costs nothing but memory.
func (s *Server) Namespace(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	ns, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the test's namespace: %v", err)
	}
	t.Cleanup(func() {
		err := s.Client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the test's namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// namespacePrefix turns a test name into a GenerateName for a namespace:
// lower case letters, digits and dashes, at most 52 characters with the
// trailing dash, leaving room for the random suffix in 63.
func namespacePrefix(testName string) string {
	var b strings.Builder
	dash := true // no leading dash
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimSuffix(b.String(), "-")
	if len(name) > 51 {
		name = strings.TrimSuffix(name[:51], "-")
	}
	if name == "" {
		name = "test"
	}
	return name + "-"
}
