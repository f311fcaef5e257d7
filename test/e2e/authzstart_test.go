package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcp-project/gcp/test/poll"
)

// TestNoForbiddenWhileStarting sends requests as `gcp controllers` (a user
// RBAC, not system:masters, authorizes) to a `gcp apiserver` from the
// moment it listens: none may get a 403 because the authorizer's caches
// have not loaded yet. The chaos test found controllers refused their own
// Lease by an API server just restarted; kube-apiserver answers 403 in
// that window too (kubernetes/kubernetes#121635).
func TestNoForbiddenWhileStarting(t *testing.T) {
	t.Parallel()
	c := newEtcdCluster(t, 1)
	port := freePort(t)
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	cfg, err := clientcmd.BuildConfigFromFlags(server, filepath.Join(c.base, "controllers.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = -1, 0, 20*time.Second
	client := kubernetes.NewForConfigOrDie(cfg)
	// Round 0 is the first start: until the bootstrap policy is written
	// (a post-start hook, which /readyz waits for) the controllers have no
	// binding at all, so a 403 there is the truth. Rounds 1 and 2 are
	// restarts, as the chaos test's are.
	for round := range 3 {
		proc := startProcess(t, c.apiserverArgs(port, c.etcdURLs)...)
		answered := 0
		// No interval: the requests come as fast as they are answered.
		poll.Until(t, 0, 60*time.Second, func() error {
			_, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "gcp-controllers", metav1.GetOptions{})
			var status apierrors.APIStatus
			switch {
			case err == nil || apierrors.IsNotFound(err):
				if answered++; answered == 20 {
					return nil
				}
			case errors.As(err, &status) && status.Status().Code == http.StatusForbidden && round > 0:
				t.Fatalf("round %d: the controllers' own Lease forbidden to them while the API server starts: %v", round, err)
			}
			return fmt.Errorf("round %d: %d of 20 answers: %v\n%s", round, answered, err, proc.log)
		})
		_ = proc.cmd.Process.Kill()
		<-proc.done
	}
}
