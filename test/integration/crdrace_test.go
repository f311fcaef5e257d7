package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestCreateRacingCRDDelete: creates of a custom resource sent while its
// CRD is deleted are answered 201, 403 (the CRD is terminating) or 404
// (it is gone), never 503 "apiserver is shutting down": the server is not
// shutting down. apiextensions-apiserver answers that 503 when a request
// took the CRD's storage before the storage was replaced or removed and
// reaches its drain wait after the wait began; a create sent within two
// seconds of the CRD's establishment sleeps two seconds in between.
func TestCreateRacingCRDDelete(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	crds := apiextensionsclient.NewForConfigOrDie(s.AdminConfig).ApiextensionsV1().CustomResourceDefinitions()
	crd := preservingCRD("race.example.com", "racers", "Racer")
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Creators send creates from before the CRD is served until it is gone
	// after its deletion; those that arrive within two seconds of its
	// establishment sleep in the handler while it is deleted. Raw HTTP,
	// because client-go retries a 503 with Retry-After by itself.
	raw := rawHTTP(t, s.AdminConfig)
	url := strings.TrimSuffix(s.AdminConfig.Host, "/") + "/apis/race.example.com/v1/namespaces/default/racers"
	var (
		mu      sync.Mutex
		answers = map[int]int{}
		bad     []string
		wg      sync.WaitGroup
		deleted atomic.Bool
	)
	deadline := time.Now().Add(30 * time.Second)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(deadline); n++ {
				body := fmt.Sprintf(`{"apiVersion":"race.example.com/v1","kind":"Racer","metadata":{"name":"r-%d-%d"}}`, i, n)
				wasDeleted := deleted.Load()
				code, msg := post(raw, url, body)
				mu.Lock()
				answers[code]++
				if code >= 500 || code == 0 {
					bad = append(bad, fmt.Sprintf("%d %s", code, msg))
				}
				mu.Unlock()
				if code == http.StatusNotFound {
					if wasDeleted {
						return
					}
					time.Sleep(10 * time.Millisecond) // not served yet: pace the retries
				}
			}
		}()
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		return err == nil && isEstablished(got), nil
	}); err != nil {
		t.Fatalf("CRD not established: %v", err)
	}
	if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted.Store(true)
	wg.Wait()
	t.Logf("answers by status code: %v", answers)
	if len(bad) > 0 {
		t.Fatalf("%d creates racing the CRD's deletion got a server error or none, first: %s", len(bad), bad[0])
	}
	if answers[http.StatusNotFound] == 0 {
		t.Fatalf("no create saw the CRD gone (404) within 30s: %v", answers)
	}
}

func ptrTo[T any](v T) *T { return &v }

func isEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// post sends a JSON body and returns the answer's status code (0 if there
// was none) and its body, or the error.
func post(c *http.Client, url, body string) (int, string) {
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
