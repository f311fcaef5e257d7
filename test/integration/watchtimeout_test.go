package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/testserver"
)

// TestWatchTimeoutSeconds sends watches, native and custom, in each of the
// three forms a watch takes (?watch=true, ?watch=1, the /watch/ path), with
// a timeoutSeconds no watch can have: negative, too large for an int64, too
// large for a time.Duration once made seconds, or not a number. Each must
// be refused with a 400 naming timeoutSeconds, not started and then ended
// with an InternalError event or an empty body. Zero (the server's
// default) and a small positive value still start the watch.
func TestWatchTimeoutSeconds(t *testing.T) {
	t.Parallel()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.watchtimeout.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "watchtimeout.example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
	s := testserver.Start(t, testserver.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
	watches := []string{
		"/api/v1/namespaces/default/configmaps?watch=true&",
		"/api/v1/namespaces/default/configmaps?watch=1&",
		"/api/v1/watch/namespaces/default/configmaps?",
		"/api/v1/configmaps?watch=true&",
		"/apis/watchtimeout.example.com/v1/namespaces/default/gadgets?watch=true&",
		"/apis/watchtimeout.example.com/v1/namespaces/default/gadgets?watch=1&",
		"/apis/watchtimeout.example.com/v1/watch/namespaces/default/gadgets?",
	}
	bad := []string{
		"-5",
		"-1",
		"99999999999999999999", // past int64
		"9223372037",           // past time.Duration once multiplied by time.Second
		"9223372036854775807",
		"abc",
		"1.5",
	}
	client := watchClient(t, s.AdminConfig)
	// A custom resource's watch cache may still be starting (429) when its
	// CRD is first served.
	gadgets := s.AdminConfig.Host + "/apis/watchtimeout.example.com/v1/namespaces/default/gadgets?watch=true&timeoutSeconds=1"
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, _ := watchStatus(t, client, gadgets)
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("gadgets' watch never started: %v", err)
	}
	for _, w := range watches {
		for _, v := range bad {
			code, body := watchStatus(t, client, s.AdminConfig.Host+w+"timeoutSeconds="+v)
			if code != http.StatusBadRequest || !strings.Contains(body, "timeoutSeconds") {
				t.Errorf("%stimeoutSeconds=%s: got %d %.300q, want 400 naming timeoutSeconds", w, v, code, body)
			}
		}
		for _, v := range []string{"0", "1", "9223372036"} {
			if code, body := watchStatus(t, client, s.AdminConfig.Host+w+"timeoutSeconds="+v); code != http.StatusOK {
				t.Errorf("%stimeoutSeconds=%s: got %d %.300q, want 200", w, v, code, body)
			}
		}
	}
}

// watchClient is the admin's HTTP client without an overall timeout: each
// request in watchStatus has its own.
func watchClient(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 0
	return c
}

// watchStatus starts a GET of url and returns its status and, for an error,
// its body. A 200 (a watch started) is closed at once, its body unread.
func watchStatus(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(body)
}
