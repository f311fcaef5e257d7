package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
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
		"jwt": `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "https://issuer.example.com", audiences: [gcp]}
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
