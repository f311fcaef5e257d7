package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gcp-project/gcp/test/oidcprovider"
	"github.com/gcp-project/gcp/test/poll"
)

// oidcConfig is an AuthenticationConfiguration trusting the issuers, each
// with its client as audience: user names from the email claim, groups
// from groups with groupsPrefix, uid from sub, an extra value from the
// tenant claim, and verified emails only.
func oidcConfig(groupsPrefix string, issuers ...oidcIssuer) string {
	var b strings.Builder
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n")
	for _, i := range issuers {
		ca, _ := json.Marshal(string(i.ca))
		discovery := ""
		if i.discovery != "" {
			discovery = "\n    discoveryURL: " + i.discovery
		}
		fmt.Fprintf(&b, `- issuer:
    url: %s%s
    audiences: [%s, another-client]
    audienceMatchPolicy: MatchAny
    certificateAuthority: %s
  claimMappings:
    username: {claim: email, prefix: ""}
    groups: {claim: groups, prefix: %q}
    uid: {claim: sub}
    extra:
    - key: example.com/tenant
      valueExpression: 'has(claims.tenant) ? claims.tenant : ""'
  claimValidationRules:
  - expression: 'claims.email_verified == true'
    message: the email address must be verified
  - claim: tenant
    requiredValue: blue
  userValidationRules:
  - expression: "!user.username.startsWith('system:')"
    message: user names must not look like system users
`, i.url, discovery, i.audience, ca, groupsPrefix)
	}
	return b.String()
}

// oidcIssuer is one issuer of oidcConfig.
type oidcIssuer struct {
	url, audience string
	ca            []byte
	// discovery, if set, is where the discovery document is fetched from
	// instead of <url>/.well-known/openid-configuration.
	discovery string
}

func issuerOf(p *oidcprovider.Provider, audience string) oidcIssuer {
	return oidcIssuer{url: p.IssuerURL, audience: audience, ca: p.CAData}
}

// devLogin is a login as dev@example.com in group devs of tenant blue.
func devLogin(clientID string) oidcprovider.Login {
	return oidcprovider.Login{ClientID: clientID, Subject: "dev-1234", Claims: map[string]any{
		"email": "dev@example.com", "email_verified": true, "groups": []string{"devs"}, "tenant": "blue",
	}}
}

// execPluginKubeconfig writes a kubeconfig for cp's server whose user gets
// token from an exec credential plugin, as kubelogin gives it.
func execPluginKubeconfig(t *testing.T, cp controlPlane, token string) string {
	t.Helper()
	dir := t.TempDir()
	plugin := filepath.Join(dir, "credential-plugin")
	script := "#!/bin/sh\ncat <<'EOF'\n" +
		`{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"` + token + `"}}` + "\nEOF\n"
	if err := os.WriteFile(plugin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	path := tokenKubeconfig(t, cp, "unused")
	mustGCP(t, "kubectl", "--kubeconfig", path, "config", "set-credentials", "user", "--token=",
		"--exec-api-version=client.authentication.k8s.io/v1", "--exec-command="+plugin, "--exec-interactive-mode=Never")
	return path
}

// forgedToken is a JWT claiming to be from issuer for audience, signed by
// a key the issuer never had.
func forgedToken(t *testing.T, issuer, audience string) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "forged"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	payload, _ := json.Marshal(map[string]any{"iss": issuer, "aud": audience, "sub": "dev-1234", "iat": now, "exp": now + 600,
		"email": "dev@example.com", "email_verified": true, "groups": []string{"devs"}})
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	token, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// kubectlAs runs gcp kubectl with kubeconfig and returns its output and
// exit code.
func kubectlAs(t *testing.T, kubeconfig string, args ...string) (string, int) {
	t.Helper()
	return runGCP(t, append([]string{"kubectl", "--kubeconfig", kubeconfig}, args...)...)
}

// wantUnauthorized checks that kubectl with kubeconfig is refused with 401.
func wantUnauthorized(t *testing.T, what, kubeconfig string) {
	t.Helper()
	out, code := kubectlAs(t, kubeconfig, "get", "configmaps")
	if code == 0 || !strings.Contains(out, "Unauthorized") {
		t.Errorf("%s: want 401, got exit %d\n%s", what, code, out)
	}
}

// TestOIDCLogin logs people in to gcp start with ID tokens of a real
// OpenID provider (ory/hydra, its own process): claim mappings as kubectl
// auth whoami shows them, the token in a kubeconfig and from an exec
// credential plugin, 403 until RBAC binds the mapped group, 401 for an
// expired token, the wrong audience, an unknown issuer, a forged signature
// or an unverified email; an issuer down at start does not stop gcp; the
// file reloaded without a restart (a bad one kept out); and once the
// issuer is gone, tokens that verify with the keys gcp holds still work.
func TestOIDCLogin(t *testing.T) {
	t.Parallel()
	idp := oidcprovider.Start(t, oidcprovider.Options{})
	shortLived := oidcprovider.Start(t, oidcprovider.Options{IDTokenTTL: 10 * time.Second})
	stranger := oidcprovider.Start(t, oidcprovider.Options{})
	client, shortClient, otherClient := idp.Client(t), shortLived.Client(t), idp.Client(t)
	// An issuer nobody serves: gcp must start anyway.
	down := oidcIssuer{url: fmt.Sprintf("https://127.0.0.1:%d", freePort(t)), audience: "gcp", ca: idp.CAData}

	config := filepath.Join(t.TempDir(), "authn.yaml")
	second := issuerOf(shortLived, shortClient)
	second.discovery = shortLived.IssuerURL + "/.well-known/openid-configuration"
	writeFileAtomically(t, config, oidcConfig("oidc:", issuerOf(idp, client), second, down))
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	a := startAllInOne(t, t.TempDir(), "--authentication-config", config, "--audit-log-path", auditLog)

	token := idp.IDToken(t, devLogin(client))
	dev := tokenKubeconfig(t, a, token)
	out, code := kubectlAs(t, dev, "auth", "whoami", "-o", "json")
	if code != 0 {
		t.Fatalf("whoami with an ID token: exit %d\n%s", code, out)
	}
	for _, want := range []string{`"username": "dev@example.com"`, `"uid": "dev-1234"`, `"oidc:devs"`, `"system:authenticated"`, `"example.com/tenant"`, `"blue"`} {
		if !strings.Contains(out, want) {
			t.Errorf("whoami lacks %s:\n%s", want, out)
		}
	}
	if out, code := kubectlAs(t, dev, "get", "configmaps"); code == 0 || !strings.Contains(out, "Forbidden") {
		t.Errorf("before any binding: want 403, got exit %d\n%s", code, out)
	}
	a.kubectl("create", "rolebinding", "devs-edit", "--clusterrole=edit", "--group=oidc:devs", "-n", "default")
	a.eventually(t, "the mapped group's binding", 30*time.Second, func(_ string, err error) bool { return err == nil },
		"--kubeconfig", dev, "create", "configmap", "from-oidc")

	plugin := execPluginKubeconfig(t, a, token)
	if out, code := kubectlAs(t, plugin, "get", "configmap", "from-oidc"); code != 0 {
		t.Errorf("through the exec credential plugin: exit %d\n%s", code, out)
	}

	// A second issuer of the same file, whose tokens expire.
	short := tokenKubeconfig(t, a, shortLived.IDToken(t, devLogin(shortClient)))
	if out, code := kubectlAs(t, short, "auth", "whoami"); code != 0 {
		t.Errorf("a token of the second issuer: exit %d\n%s", code, out)
	}
	unverified := devLogin(client)
	unverified.Claims["email_verified"] = false
	systemLookalike := devLogin(client)
	systemLookalike.Claims["email"] = "system:admin"
	otherTenant := devLogin(client)
	otherTenant.Claims["tenant"] = "green"
	for what, tok := range map[string]string{
		"the wrong audience":       idp.IDToken(t, devLogin(otherClient)),
		"an unknown issuer":        stranger.IDToken(t, devLogin(stranger.Client(t))),
		"a forged signature":       forgedToken(t, idp.IssuerURL, client),
		"an unverified email":      idp.IDToken(t, unverified),
		"a user validation rule":   idp.IDToken(t, systemLookalike),
		"a required claim's value": idp.IDToken(t, otherTenant),
		"not a JWT":                "not-a-jwt",
	} {
		wantUnauthorized(t, what, tokenKubeconfig(t, a, tok))
	}
	poll.Until(t, 500*time.Millisecond, 30*time.Second, func() error {
		if out, code := kubectlAs(t, short, "get", "configmaps"); code == 0 || !strings.Contains(out, "Unauthorized") {
			return fmt.Errorf("an expired token still accepted: exit %d\n%s", code, out)
		}
		return nil
	})

	// Reloaded without a restart: a new groups prefix.
	writeFileAtomically(t, config, oidcConfig("corp:", issuerOf(idp, client)))
	a.eventually(t, "the reloaded claim mapping", 60*time.Second, func(out string, err error) bool {
		return err == nil && strings.Contains(out, `"corp:devs"`)
	}, "--kubeconfig", dev, "auth", "whoami", "-o", "json")
	// A bad file is kept out: the configuration in use stays.
	writeFileAtomically(t, config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: http://insecure.example.com, audiences: [x]}\n")
	a.eventually(t, "the refused reload counted", 60*time.Second, func(out string, err error) bool {
		return err == nil && strings.Contains(out, `apiserver_authentication_config_controller_automatic_reloads_total{apiserver_id_hash=`) &&
			strings.Contains(out, `status="failure"`)
	}, "get", "--raw", "/metrics")
	if out, code := kubectlAs(t, dev, "auth", "whoami", "-o", "json"); code != 0 || !strings.Contains(out, `"corp:devs"`) {
		t.Errorf("after a bad file: exit %d\n%s", code, out)
	}

	// The issuer goes away; gcp verifies with the keys it holds.
	idp.Kill()
	if out, code := kubectlAs(t, dev, "auth", "whoami"); code != 0 || !strings.Contains(out, "dev@example.com") {
		t.Errorf("with the issuer gone: exit %d\n%s", code, out)
	}
	// The audit log names the user and the authorizer's decision and
	// reason, never the token.
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		data, err := os.ReadFile(auditLog)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), token) || strings.Contains(string(data), strings.Split(token, ".")[2]) {
			t.Fatal("the audit log holds an ID token")
		}
		var allowed, forbidden bool
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, `"username":"dev@example.com"`) {
				continue
			}
			allowed = allowed || strings.Contains(line, `"authorization.k8s.io/decision":"allow"`) && strings.Contains(line, `"authorization.k8s.io/reason":"RBAC: allowed by RoleBinding`)
			forbidden = forbidden || strings.Contains(line, `"authorization.k8s.io/decision":"forbid"`)
		}
		if !allowed || !forbidden {
			return fmt.Errorf("no audit events of dev@example.com allowed (%v) and forbidden (%v) yet", allowed, forbidden)
		}
		return nil
	})
	metrics := a.kubectl("get", "--raw", "/metrics")
	if !strings.Contains(metrics, "apiserver_authentication_jwt_authenticator_latency_seconds") {
		t.Error("no apiserver_authentication_jwt_authenticator_latency_seconds in /metrics")
	}
}

// TestOIDCLoginSplit: two `gcp apiserver` of the split shape with the same
// authentication configuration, and a third with kube-apiserver's --oidc-*
// flags, all log the provider's users in.
func TestOIDCLoginSplit(t *testing.T) {
	t.Parallel()
	idp := oidcprovider.Start(t, oidcprovider.Options{})
	client := idp.Client(t)
	config := filepath.Join(t.TempDir(), "authn.yaml")
	writeFileAtomically(t, config, oidcConfig("oidc:", issuerOf(idp, client)))

	c := newEtcdCluster(t, 1)
	a := &allInOne{t: t, binary: gcpBinary, dataDir: c.base}
	servers := []string{
		c.startAPIServerOn(a, c.etcdURLs, "--authentication-config", config),
		c.startAPIServerOn(a, c.etcdURLs, "--authentication-config", config),
		// kube-apiserver's older flags, saying the same but the extra
		// value, claim validation and user validation.
		c.startAPIServerOn(a, c.etcdURLs, "--oidc-issuer-url", idp.IssuerURL, "--oidc-client-id", client, "--oidc-ca-file", idp.CAFile,
			"--oidc-username-claim", "email", "--oidc-groups-claim", "groups", "--oidc-groups-prefix", "oidc:", "--oidc-required-claim", "tenant=blue"),
	}
	mustGCP(t, "kubectl", "--kubeconfig", a.kubeconfig(), "config", "set-cluster", "gcp", "--server", servers[0])
	a.kubectl("create", "clusterrolebinding", "devs-view", "--clusterrole=view", "--group=oidc:devs")
	dev := tokenKubeconfig(t, a, idp.IDToken(t, devLogin(client)))
	for _, server := range servers {
		a.eventually(t, "a token at "+server, 30*time.Second, func(_ string, err error) bool { return err == nil },
			"--kubeconfig", dev, "--server", server, "get", "configmaps", "-n", "default")
	}
}

// TestBadAuthenticationConfigurationIsOneLine: an authentication
// configuration or flag that makes no sense is one line naming the file
// and the field, exit 1, and nothing left on disk.
func TestBadAuthenticationConfigurationIsOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string { return writeFile(t, dir, name, content) }
	header := "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n"
	issuer := func(url, mappings string) string {
		return "- issuer: {url: \"" + url + "\", audiences: [gcp]}\n  claimMappings: " + mappings + "\n"
	}
	plain := issuer("https://issuer.example.com", "{username: {claim: sub, prefix: \"\"}}")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--authentication-config", write("malformed.yaml", header+"- issuer: [\n")}, "malformed.yaml"},
		{[]string{"--authentication-config", write("http.yaml", header+issuer("http://issuer.example.com", "{username: {claim: sub, prefix: \"\"}}"))}, "jwt[0].issuer.url"},
		{[]string{"--authentication-config", write("cel.yaml", header+issuer("https://issuer.example.com", "{username: {expression: \"claims.sub +\"}}"))}, "jwt[0].claimMappings.username.expression"},
		{[]string{"--authentication-config", write("twice.yaml", header+plain+plain)}, "jwt[1].issuer.url"},
		{[]string{"--authentication-config", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"--authentication-config", write("ok.yaml", header+plain), "--oidc-issuer-url", "https://issuer.example.com", "--oidc-client-id", "gcp"}, "mutually exclusive"},
		{[]string{"--oidc-issuer-url", "https://issuer.example.com"}, "--oidc-client-id"},
		{[]string{"--authentication-token-webhook-config-file", filepath.Join(dir, "no.kubeconfig")}, "--authentication-token-webhook-config-file"},
	} {
		wantStartRefused(t, tc.want, tc.args...)
	}
}
