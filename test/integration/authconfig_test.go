package integration

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	clientgoinformers "k8s.io/client-go/informers"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// TestAnonymousFromAuthenticationConfig: the anonymous section of an
// AuthenticationConfiguration file decides which paths anonymous requests
// reach, as kube-apiserver's --authentication-config does.
func TestAnonymousFromAuthenticationConfig(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "authn.yaml")
	if err := os.WriteFile(file, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
  - path: /livez
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := testserver.Start(t, testserver.Options{
		Stack:     layering.Generic(),
		APIServer: func(o *options.Options) { o.Authentication.ConfigFile = file },
	})
	c := httpsClient(t, s, nil)
	if code := getStatus(t, c, s.URL+"/livez"); code != http.StatusOK {
		t.Errorf("anonymous /livez: want 200, got %d", code)
	}
	for _, p := range []string{"/healthz", "/version", "/api/v1/namespaces"} {
		if code := getStatus(t, c, s.URL+p); code != http.StatusUnauthorized {
			t.Errorf("anonymous %s: want 401, got %d", p, code)
		}
	}
}

// TestBadAuthenticationConfig: a configuration the server cannot honour
// stops it from starting, with a message naming the file.
func TestBadAuthenticationConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"not-yaml":   "{{{",
		"wrong-kind": "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n",
		"http-issuer": `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "http://issuer.example.com", audiences: [gcp]}
  claimMappings: {username: {claim: sub, prefix: ""}}
`,
		"cel-does-not-compile": `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "https://issuer.example.com", audiences: [gcp]}
  claimMappings: {username: {expression: "claims.sub +"}}
`,
		"same-issuer-twice": `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "https://issuer.example.com", audiences: [gcp]}
  claimMappings: {username: {claim: sub, prefix: ""}}
- issuer: {url: "https://issuer.example.com", audiences: [other]}
  claimMappings: {username: {claim: sub, prefix: ""}}
`,
		"ca-not-pem": `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "https://issuer.example.com", audiences: [gcp], certificateAuthority: "not a certificate"}
  claimMappings: {username: {claim: sub, prefix: ""}}
`,
		"egress-selector": `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "https://issuer.example.com", audiences: [gcp], egressSelectorType: controlplane}
  claimMappings: {username: {claim: sub, prefix: ""}}
`,
		"conditions-while-disabled": `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous: {enabled: false, conditions: [{path: /livez}]}
`,
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := allinone.Start(t.Context(), allInOne(filepath.Join(dir, name),
				func(o *options.Options) { o.Authentication.ConfigFile = file }), composeGeneric(t))
			if err == nil || !strings.Contains(err.Error(), "--authentication-config") {
				t.Fatalf("want an --authentication-config error, got %v", err)
			}
		})
	}
}

// TestLayerAuthenticator: a layer's own authenticator recognises requests
// the server's do not, after them, and who it says made the request is who
// SelfSubjectReview reports and RBAC authorizes.
func TestLayerAuthenticator(t *testing.T) {
	t.Parallel()
	const header = "X-Layer-User"
	layer := layering.Layer{
		Name: "header-authn",
		Authenticators: []composition.AuthenticatorFactory{func(clientgoinformers.SharedInformerFactory) (authenticator.Request, error) {
			return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
				name := req.Header.Get(header)
				if name == "" {
					return nil, false, nil
				}
				return &authenticator.Response{User: &user.DefaultInfo{Name: name, Groups: []string{"layer-users", user.AllAuthenticated}}}, true, nil
			}), nil
		}},
	}
	s := testserver.Start(t, testserver.Options{Stack: append(layering.Generic(), layer)})
	c := httpsClient(t, s, nil)
	get := func(path string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(header, "layer-alice")
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get("/apis/authentication.k8s.io/v1/selfsubjectreviews")
	if code != http.StatusCreated || !strings.Contains(body, `"username":"layer-alice"`) || !strings.Contains(body, `"layer-users"`) {
		t.Fatalf("SelfSubjectReview: %d %s", code, body)
	}
	// Recognised, but nothing grants the user anything: 403, not 401.
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v1/namespaces", nil)
	req.Header.Set(header, "layer-alice")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("list namespaces as layer-alice: %d, want 403", resp.StatusCode)
	}
}

// TestAuthorizationRBACWithoutTheRBACLayer: an authorization configuration
// naming RBAC on a stack without the rbac layer stops the start, before
// etcd holds anything, with a message naming the configuration.
func TestAuthorizationRBACWithoutTheRBACLayer(t *testing.T) {
	t.Parallel()
	comp, err := layering.Generic().Without(layering.RBAC).Compose()
	if err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	_, err = allinone.Start(t.Context(), allInOne(dataDir, func(o *options.Options) {
		o.Authorization.Config = &apiserverapi.AuthorizationConfiguration{Authorizers: []apiserverapi.AuthorizerConfiguration{{Type: "RBAC", Name: "rbac"}}}
	}), comp)
	if err == nil || !strings.Contains(err.Error(), "authorizer type RBAC: this control plane has no RBAC") {
		t.Fatalf("want the missing RBAC named, got %v", err)
	}
	if _, err := os.Stat(allinone.EtcdDir(dataDir)); !os.IsNotExist(err) {
		t.Errorf("etcd's data dir exists after the refused start (%v)", err)
	}
}
