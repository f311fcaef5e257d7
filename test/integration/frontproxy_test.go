package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestFrontProxyAuthentication: the aggregator's front-proxy certificate may
// assert a user in X-Remote-* headers; any other certificate's headers are
// ignored. The trust settings are published for aggregated API servers in
// kube-system/extension-apiserver-authentication.
func TestFrontProxyAuthentication(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	client := func(certFile, keyFile string) *http.Client {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return httpsClient(t, s, &cert)
	}
	get := func(c *http.Client, user string, groups ...string) int {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v1/namespaces/default/configmaps", nil)
		req.Header.Set("X-Remote-User", user)
		for _, g := range groups {
			req.Header.Add("X-Remote-Group", g)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	proxy := client(s.PKI.FrontProxyClientCert, s.PKI.FrontProxyClientKey)
	if code := get(proxy, "alice", "system:masters"); code != http.StatusOK {
		t.Fatalf("front proxy asserting a master: want 200, got %d", code)
	}
	if code := get(proxy, "alice", "dev"); code != http.StatusForbidden {
		t.Fatalf("front proxy asserting a non-master: want 403, got %d", code)
	}
	// The admin certificate is not from the front-proxy CA: its headers are
	// not believed, the request is the admin's own.
	if code := get(client(s.PKI.AdminCert, s.PKI.AdminKey), "nobody"); code != http.StatusOK {
		t.Fatalf("admin with headers: want 200 as the admin, got %d", code)
	}

	caPEM, err := os.ReadFile(s.PKI.CACert)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]string
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cm, err := s.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		data = cm.Data
		return true, nil
	})
	if err != nil {
		t.Fatalf("extension-apiserver-authentication not published: %v", err)
	}
	frontCA, _ := os.ReadFile(s.PKI.FrontProxyCACert)
	if data["client-ca-file"] != string(caPEM) || data["requestheader-client-ca-file"] != string(frontCA) {
		t.Fatalf("CA bundles not published: %v", data)
	}
	var allowed []string
	if err := json.Unmarshal([]byte(data["requestheader-allowed-names"]), &allowed); err != nil || len(allowed) != 1 || allowed[0] != "front-proxy-client" {
		t.Fatalf("requestheader-allowed-names: %q %v", data["requestheader-allowed-names"], err)
	}
	if data["requestheader-username-headers"] != `["X-Remote-User"]` {
		t.Fatalf("requestheader-username-headers: %q", data["requestheader-username-headers"])
	}
}
