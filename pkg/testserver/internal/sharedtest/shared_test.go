package sharedtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers/namespace"
	"github.com/gcp-project/gcp/pkg/testserver"
)

var server *testserver.Server

func TestMain(m *testing.M) {
	os.Exit(testserver.RunMain(m, testserver.Options{Controllers: []string{namespace.Name}}, &server))
}

// TestParallelTestsOwnNamespaces: parallel tests on the shared server
// each get a namespace of their own, named after the test, and write the
// same names without meeting.
func TestParallelTestsOwnNamespaces(t *testing.T) {
	t.Parallel()
	for i := range 8 {
		t.Run(fmt.Sprintf("Case_%d", i), func(t *testing.T) {
			t.Parallel()
			ns := server.Namespace(t)
			if want := fmt.Sprintf("testparalleltestsownnamespaces-case-%d-", i); !strings.HasPrefix(ns, want) {
				t.Errorf("namespace %q is not named after the test (%q...)", ns, want)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "same"}, Data: map[string]string{"case": fmt.Sprint(i)}}
			if _, err := server.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNamespaceDeletedAfterTest: when a test ends, its namespace and what
// it left there are deleted (the namespace controller runs here).
func TestNamespaceDeletedAfterTest(t *testing.T) {
	t.Parallel()
	var ns string
	t.Run("inner", func(t *testing.T) {
		ns = server.Namespace(t)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "left-behind"}}
		if _, err := server.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := server.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("namespace %s still there after its test: %v", ns, err)
	}
}
