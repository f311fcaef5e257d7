package oidcprovider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// TestProviderIssuesIDTokens gets an ID token from a real hydra through the
// headless authorization code flow and checks it as a relying party would:
// its signature against the keys hydra publishes (over HTTPS with the
// provider's CA), and its iss, aud, sub, exp and custom claims. It does so
// for an issuer on 127.0.0.1 and for one named by Options.Hostname, which
// the relying party reaches by dialing PublicAddr for it, as a proxy would.
func TestProviderIssuesIDTokens(t *testing.T) {
	t.Parallel()
	for _, hostname := range []string{"", "idp.test"} {
		t.Run("hostname="+hostname, func(t *testing.T) {
			t.Parallel()
			testIssuesIDTokens(t, hostname)
		})
	}
}

func testIssuesIDTokens(t *testing.T, hostname string) {
	p := Start(t, Options{IDTokenTTL: 10 * time.Minute, Hostname: hostname})

	_, port, err := net.SplitHostPort(p.PublicAddr)
	if err != nil || !strings.HasPrefix(p.PublicAddr, "127.0.0.1:") {
		t.Fatalf("PublicAddr %q is not 127.0.0.1:<port> (%v)", p.PublicAddr, err)
	}
	wantIssuer := "https://" + p.PublicAddr
	if hostname != "" {
		wantIssuer = "https://" + hostname + ":" + port
	}
	if p.IssuerURL != wantIssuer {
		t.Fatalf("IssuerURL %q, want %q", p.IssuerURL, wantIssuer)
	}

	var discovery struct {
		Issuer        string `json:"issuer"`
		JWKSURI       string `json:"jwks_uri"`
		Authorization string `json:"authorization_endpoint"`
		Token         string `json:"token_endpoint"`
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.CAData) {
		t.Fatalf("CAData holds no certificate: %q", p.CAData)
	}
	// The relying party's own dialer, not the package's: the certificate
	// must name the issuer's host, and hydra must answer requests for it.
	var d net.Dialer
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == strings.TrimPrefix(p.IssuerURL, "https://") {
				addr = p.PublicAddr
			}
			return d.DialContext(ctx, network, addr)
		},
	}}
	getJSON(t, c, p.IssuerURL+"/.well-known/openid-configuration", &discovery)
	if discovery.Issuer != p.IssuerURL {
		t.Errorf("discovery issuer %q, IssuerURL %q", discovery.Issuer, p.IssuerURL)
	}
	if discovery.JWKSURI != p.JWKSURL() {
		t.Errorf("discovery jwks_uri %q, JWKSURL() %q", discovery.JWKSURI, p.JWKSURL())
	}
	for _, endpoint := range []string{discovery.Authorization, discovery.Token} {
		if !strings.HasPrefix(endpoint, p.IssuerURL+"/") {
			t.Errorf("discovery names endpoint %q, not under the issuer %s", endpoint, p.IssuerURL)
		}
	}
	var keys jose.JSONWebKeySet
	getJSON(t, c, discovery.JWKSURI, &keys)

	client := p.Client(t)
	before := time.Now()
	token := p.IDToken(t, Login{
		ClientID: client,
		Subject:  "alice",
		Claims:   map[string]any{"groups": []string{"dev", "ops"}, "email": "alice@example.com"},
	})

	jws, err := jose.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatalf("parsing %q: %v", token, err)
	}
	kid := jws.Signatures[0].Header.KeyID
	found := keys.Key(kid)
	if len(found) != 1 {
		t.Fatalf("the JWKS has %d keys with the token's kid %q: %+v", len(found), kid, keys)
	}
	payload, err := jws.Verify(found[0].Key)
	if err != nil {
		t.Fatalf("signature does not verify with the published key %q: %v", kid, err)
	}
	var claims struct {
		Iss    string   `json:"iss"`
		Aud    []string `json:"aud"`
		Sub    string   `json:"sub"`
		Exp    int64    `json:"exp"`
		Groups []string `json:"groups"`
		Email  string   `json:"email"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatalf("claims %s: %v", payload, err)
	}
	t.Logf("issuer %s, claims %s", p.IssuerURL, payload)
	if claims.Iss != p.IssuerURL {
		t.Errorf("iss %q, IssuerURL %q", claims.Iss, p.IssuerURL)
	}
	if !slices.Equal(claims.Aud, []string{client}) {
		t.Errorf("aud %q, want [%q]", claims.Aud, client)
	}
	if claims.Sub != "alice" {
		t.Errorf("sub %q, want alice", claims.Sub)
	}
	if !slices.Equal(claims.Groups, []string{"dev", "ops"}) || claims.Email != "alice@example.com" {
		t.Errorf("custom claims: groups %q, email %q", claims.Groups, claims.Email)
	}
	// The TTL was asked for; the bounds leave room for a slow machine.
	exp := time.Unix(claims.Exp, 0)
	if exp.Before(before.Add(9*time.Minute)) || exp.After(time.Now().Add(11*time.Minute)) {
		t.Errorf("exp %s is not about 10 minutes after the token was issued (%s)", exp, before)
	}

	// A second login through the client IDToken makes by itself.
	other := p.IDToken(t, Login{Subject: "bob"})
	jws, err = jose.ParseSigned(other, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatalf("second token: %v", err)
	}
	if found := keys.Key(jws.Signatures[0].Header.KeyID); len(found) != 1 {
		t.Errorf("second token's kid %q is not in the JWKS once", jws.Signatures[0].Header.KeyID)
	} else if _, err := jws.Verify(found[0].Key); err != nil {
		t.Errorf("second token's signature: %v", err)
	}
}

func getJSON(t *testing.T, c *http.Client, url string, into any) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestProviderTTLStopAndKill checks that Options.IDTokenTTL reaches the
// tokens, and that Stop and Kill take the issuer away, as a test of an
// authenticator whose issuer went down needs.
func TestProviderTTLStopAndKill(t *testing.T) {
	t.Parallel()
	for _, stop := range []string{"Stop", "Kill"} {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			p := Start(t, Options{IDTokenTTL: 3 * time.Second})
			token := p.IDToken(t, Login{Subject: "carol"})
			exp, err := unverifiedClaim(token, "exp")
			if err != nil {
				t.Fatal(err)
			}
			iat, err := unverifiedClaim(token, "iat")
			if err != nil {
				t.Fatal(err)
			}
			e, eok := exp.(float64)
			i, iok := iat.(float64)
			if !eok || !iok || e-i != 3 {
				t.Errorf("exp %v, iat %v: want 3s apart, the TTL asked for", exp, iat)
			}

			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(p.CAData)
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			var keys jose.JSONWebKeySet
			getJSON(t, c, p.JWKSURL(), &keys)
			if stop == "Stop" {
				p.Stop()
			} else {
				p.Kill()
			}
			p.Kill() // a second end does nothing
			if resp, err := c.Get(p.JWKSURL()); err == nil {
				resp.Body.Close()
				t.Fatalf("after %s the JWKS still answers %s", stop, resp.Status)
			}
		})
	}
}
