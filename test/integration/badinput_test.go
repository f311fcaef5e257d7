package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

// rawRequest sends body to path with the admin client and returns the status.
func rawRequest(t testing.TB, cfg *rest.Config, method, path, contentType string, body []byte) (int, string) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, cfg.Host+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.String()
}

// rawURLRequest sends a request to u exactly as given, path included.
func rawURLRequest(t *testing.T, cfg *rest.Config, method string, u *url.URL, body string) (int, string) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := &http.Request{Method: method, URL: u, Header: http.Header{}, Host: u.Host}
	if body != "" {
		req.Body = io.NopCloser(strings.NewReader(body))
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func assertNoConfigMap(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	_, err := client.CoreV1().ConfigMaps("default").Get(context.Background(), name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("configmap %q: want NotFound, got %v", name, err)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	cms := s.Client.CoreV1().ConfigMaps("default")

	t.Run("invalid object is 422 with field paths", func(t *testing.T) {
		_, err := cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Data:       map[string]string{"not a key!": "x"},
		}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("want 422 Invalid, got %v", err)
		}
		causes := err.(apierrors.APIStatus).Status().Details.Causes
		if len(causes) == 0 || !strings.HasPrefix(causes[0].Field, "data[") {
			t.Fatalf("want a cause at data[...], got %+v", causes)
		}
		assertNoConfigMap(t, s.Client, "bad")
	})

	t.Run("invalid name is 422", func(t *testing.T) {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Not_Valid"}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("want 422 Invalid, got %v", err)
		}
	})

	t.Run("malformed JSON is 400", func(t *testing.T) {
		code, body := rawRequest(t, s.AdminConfig, http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"`))
		if code != http.StatusBadRequest {
			t.Fatalf("want 400, got %d: %s", code, body)
		}
		assertNoConfigMap(t, s.Client, "x")
	})

	t.Run("malformed YAML is 400", func(t *testing.T) {
		code, body := rawRequest(t, s.AdminConfig, http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: [name: y\n"))
		if code != http.StatusBadRequest {
			t.Fatalf("want 400, got %d: %s", code, body)
		}
		assertNoConfigMap(t, s.Client, "y")
	})

	t.Run("namespace . or .. in the URL is 400", func(t *testing.T) {
		for _, ns := range []string{"..", "%2e%2e", "."} {
			for _, tc := range []struct{ method, path, body string }{
				{http.MethodGet, "/api/v1/namespaces/" + ns + "/configmaps", ""},
				{http.MethodGet, "/api/v1/namespaces/" + ns + "/configmaps/x", ""},
				{http.MethodDelete, "/api/v1/namespaces/" + ns + "/configmaps/x", ""},
				{http.MethodPost, "/api/v1/namespaces/" + ns + "/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dots"}}`},
				{http.MethodPut, "/api/v1/namespaces/" + ns + "/configmaps/dots", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dots"}}`},
			} {
				u, err := url.Parse(s.AdminConfig.Host)
				if err != nil {
					t.Fatal(err)
				}
				// Sent as written: no client cleans the path first.
				u.Opaque = "//" + u.Host + tc.path
				code, body := rawURLRequest(t, s.AdminConfig, tc.method, u, tc.body)
				if code != http.StatusBadRequest {
					t.Errorf("%s %s: want 400, got %d: %.200s", tc.method, tc.path, code, body)
				}
			}
		}
		assertNoConfigMap(t, s.Client, "dots")
	})

	t.Run("malformed chunked body is 400", func(t *testing.T) {
		tlsConfig, err := rest.TLSConfigFor(s.AdminConfig)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(s.AdminConfig.Host)
		conn, err := tls.Dial("tcp", u.Host, tlsConfig)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = conn.Write([]byte("POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: " + u.Host +
			"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"))
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("malformed chunked body: want 400, got %s", resp.Status)
		}
	})

	t.Run("body over 3 MiB is 413", func(t *testing.T) {
		big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":"` + strings.Repeat("a", 3*1024*1024+10) + `"}}`
		code, body := rawRequest(t, s.AdminConfig, http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", []byte(big))
		if code != http.StatusRequestEntityTooLarge {
			t.Fatalf("want 413, got %d: %.200s", code, body)
		}
		assertNoConfigMap(t, s.Client, "big")
	})

	t.Run("stale resourceVersion is 409 and loses nothing", func(t *testing.T) {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stale"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fresh := cm.DeepCopy()
		fresh.Data["v"] = "2"
		if _, err := cms.Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = "stale"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Fatalf("want 409 Conflict, got %v", err)
		}
		got, err := cms.Get(ctx, "stale", metav1.GetOptions{})
		if err != nil || got.Data["v"] != "2" {
			t.Fatalf("want v=2 kept, got %v %v", got.Data, err)
		}
	})

	t.Run("existing name is 409 AlreadyExists", func(t *testing.T) {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "twice"}, Data: map[string]string{"v": "1"}}
		if _, err := cms.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		obj.Data["v"] = "2"
		if _, err := cms.Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("want 409 AlreadyExists, got %v", err)
		}
		if got, _ := cms.Get(ctx, "twice", metav1.GetOptions{}); got.Data["v"] != "1" {
			t.Fatalf("first object changed: %v", got.Data)
		}
	})

	t.Run("unknown resource is 404", func(t *testing.T) {
		code, body := rawRequest(t, s.AdminConfig, http.MethodGet, "/api/v1/namespaces/default/pods", "", nil)
		if code != http.StatusNotFound {
			t.Fatalf("want 404, got %d: %s", code, body)
		}
	})

	t.Run("missing namespace is 404", func(t *testing.T) {
		_, err := s.Client.CoreV1().ConfigMaps("nope").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("want 404 NotFound, got %v", err)
		}
	})

}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	get := func(t *testing.T, cert *tls.Certificate, path string) int {
		t.Helper()
		resp, err := httpsClient(t, s, cert).Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("anonymous reaches only health and version", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/livez", "/readyz", "/version"} {
			if code := get(t, nil, p); code != http.StatusOK {
				t.Errorf("anonymous %s: want 200, got %d", p, code)
			}
		}
		for _, p := range []string{"/api/v1/namespaces", "/apis", "/openapi/v3", "/metrics"} {
			if code := get(t, nil, p); code != http.StatusUnauthorized {
				t.Errorf("anonymous %s: want 401, got %d", p, code)
			}
		}
	})

	t.Run("certificate from an unknown CA is 401", func(t *testing.T) {
		other := t.TempDir()
		files, err := pki.Ensure(pki.Options{Dir: other})
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.LoadX509KeyPair(files.AdminCert, files.AdminKey)
		if err != nil {
			t.Fatal(err)
		}
		if code := get(t, &cert, "/api/v1/namespaces"); code != http.StatusUnauthorized {
			t.Fatalf("want 401, got %d", code)
		}
	})

	t.Run("a user outside system:masters is 403", func(t *testing.T) {
		certPEM, keyPEM, err := pki.IssueClientCert(s.PKI.CACert, s.PKI.CAKey, "alice", []string{"dev"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		if code := get(t, &cert, "/api/v1/namespaces/default/configmaps"); code != http.StatusForbidden {
			t.Fatalf("want 403, got %d", code)
		}
		if code := get(t, &cert, "/version"); code != http.StatusOK {
			t.Fatalf("/version for alice: want 200, got %d", code)
		}
	})
}
