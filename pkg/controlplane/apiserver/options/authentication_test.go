package options

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
)

// authnOptions are authentication options from flags, with a client CA
// file set (Validate requires one).
func authnOptions(t *testing.T, args ...string) *AuthenticationOptions {
	t.Helper()
	o := NewAuthenticationOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(append([]string{"--client-ca-file=ca.crt"}, args...)); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestAuthenticationValidateErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "authn.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"issuer without client", []string{"--oidc-issuer-url=https://issuer.example.com"}, "--oidc-issuer-url and --oidc-client-id must be given together"},
		{"client without issuer", []string{"--oidc-client-id=gcp"}, "--oidc-issuer-url and --oidc-client-id must be given together"},
		{"oidc flags with a file", []string{"--oidc-issuer-url=https://issuer.example.com", "--oidc-client-id=gcp", "--authentication-config=" + file}, "mutually exclusive"},
		{"http issuer flag", []string{"--oidc-issuer-url=http://issuer.example.com", "--oidc-client-id=gcp"}, "https"},
		{"missing CA file", []string{"--oidc-issuer-url=https://issuer.example.com", "--oidc-client-id=gcp", "--oidc-ca-file=" + filepath.Join(dir, "nope.pem")}, "--oidc-ca-file"},
		{"bad signing alg", []string{"--oidc-issuer-url=https://issuer.example.com", "--oidc-client-id=gcp", "--oidc-signing-algs=HS256"}, "HS256"},
		{"token webhook kubeconfig missing", []string{"--authentication-token-webhook-config-file=" + filepath.Join(dir, "nope.kubeconfig")}, "--authentication-token-webhook-config-file"},
		{"token webhook version", []string{"--authentication-token-webhook-config-file=" + file, "--authentication-token-webhook-version=v2"}, "--authentication-token-webhook-version"},
		{"missing file", []string{"--authentication-config=" + filepath.Join(dir, "nope.yaml")}, "--authentication-config"},
	} {
		t.Run(c.name, func(t *testing.T) {
			errs := authnOptions(t, c.args...).Validate()
			if err := errors.Join(errs...); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error containing %q, got %v", c.want, err)
			}
		})
	}
}

func TestAuthenticationValueAndFileAreExclusive(t *testing.T) {
	t.Parallel()
	o := authnOptions(t, "--authentication-config=x.yaml")
	o.Config = &apiserverapi.AuthenticationConfiguration{}
	if err := errors.Join(o.Validate()...); err == nil || !strings.Contains(err.Error(), "mutually exclusive") {
		t.Fatalf("got %v", err)
	}
}

// The legacy flags become the configuration upstream derives from them.
func TestOIDCFlagsConfiguration(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		args       []string
		wantPrefix string
	}{
		{"sub is prefixed with the issuer", nil, "https://issuer.example.com#"},
		{"email is not prefixed", []string{"--oidc-username-claim=email"}, ""},
		{"dash turns prefixing off", []string{"--oidc-username-prefix=-"}, ""},
		{"an explicit prefix", []string{"--oidc-username-prefix=corp:"}, "corp:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := authnOptions(t, append([]string{"--oidc-issuer-url=https://issuer.example.com", "--oidc-client-id=gcp",
				"--oidc-groups-claim=groups", "--oidc-groups-prefix=oidc:", "--oidc-required-claim=hd=example.com"}, c.args...)...)
			if errs := o.Validate(); len(errs) > 0 {
				t.Fatal(errs)
			}
			cfg, _, err := o.configuration()
			if err != nil {
				t.Fatal(err)
			}
			jwt := cfg.JWT[0]
			if jwt.Issuer.URL != "https://issuer.example.com" || len(jwt.Issuer.Audiences) != 1 || jwt.Issuer.Audiences[0] != "gcp" {
				t.Errorf("issuer %+v", jwt.Issuer)
			}
			if p := jwt.ClaimMappings.Username.Prefix; p == nil || *p != c.wantPrefix {
				t.Errorf("username prefix %v, want %q", p, c.wantPrefix)
			}
			if g := jwt.ClaimMappings.Groups; g.Claim != "groups" || g.Prefix == nil || *g.Prefix != "oidc:" {
				t.Errorf("groups mapping %+v", g)
			}
			if r := jwt.ClaimValidationRules; len(r) != 1 || r[0].Claim != "hd" || r[0].RequiredValue != "example.com" {
				t.Errorf("claim validation rules %+v", r)
			}
		})
	}
}
