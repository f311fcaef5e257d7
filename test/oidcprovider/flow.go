package oidcprovider

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

// RedirectURI is the redirect URI of the clients Client registers. Nothing
// listens there: IDToken reads the authorization code from hydra's redirect
// without following it.
const RedirectURI = "https://client.invalid/callback"

// Login is what IDToken logs in as.
type Login struct {
	// ClientID is the client the token is issued to, and so its audience;
	// one made by Client. Empty means a client Provider creates once and
	// reuses.
	ClientID string
	// Subject is the sub claim.
	Subject string
	// Claims are put into the ID token as top-level claims (groups, email,
	// anything a test's claim mappings read). Hydra keeps its own values of
	// the claims it sets itself (iss, sub, aud, exp, iat, nonce, ...).
	Claims map[string]any
}

// Client registers an OAuth 2.0 client through hydra's admin API, allowed the
// authorization code grant with scope openid and RedirectURI, and returns its
// client ID, which is the audience of the ID tokens IDToken issues to it.
func (p *Provider) Client(t testing.TB) string {
	t.Helper()
	var created struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	body := map[string]any{
		"grant_types":                []string{"authorization_code"},
		"response_types":             []string{"code"},
		"scope":                      "openid",
		"redirect_uris":              []string{RedirectURI},
		"token_endpoint_auth_method": "client_secret_basic",
	}
	if err := p.sendJSON(http.MethodPost, p.adminURL+"/admin/clients", body, http.StatusCreated, &created); err != nil {
		t.Fatalf("oidcprovider: creating a client: %v", err)
	}
	if created.ClientID == "" || created.ClientSecret == "" {
		t.Fatalf("oidcprovider: hydra created a client without an ID or secret: %+v", created)
	}
	p.mu.Lock()
	p.clients[created.ClientID] = created.ClientSecret
	p.mu.Unlock()
	return created.ClientID
}

// IDToken logs in as l.Subject through the authorization code flow and
// returns the ID token hydra issues, signed with its published keys. The
// browser's part is played headlessly: hydra's redirects to the login and
// consent pages are read, not followed, and the challenges they carry are
// accepted through the admin API, the consent with l.Claims as the ID token's
// session claims. Hydra's cookies are kept between the steps, as a browser
// would. Any step that goes wrong fails the test.
func (p *Provider) IDToken(t testing.TB, l Login) string {
	t.Helper()
	if l.Subject == "" {
		t.Fatal("oidcprovider: IDToken needs a subject")
	}
	clientID := l.ClientID
	if clientID == "" {
		p.mu.Lock()
		clientID = p.deflt
		p.mu.Unlock()
		if clientID == "" {
			clientID = p.Client(t)
			p.mu.Lock()
			if p.deflt == "" {
				p.deflt = clientID
			}
			clientID = p.deflt
			p.mu.Unlock()
		}
	}
	p.mu.Lock()
	secret, ok := p.clients[clientID]
	p.mu.Unlock()
	if !ok {
		t.Fatalf("oidcprovider: client %q was not made by this provider's Client", clientID)
	}
	token, err := p.idToken(clientID, secret, l)
	if err != nil {
		t.Fatalf("oidcprovider: ID token for %q: %v", l.Subject, err)
	}
	return token
}

func (p *Provider) idToken(clientID, secret string, l Login) (string, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return "", err
	}
	browser := *p.http
	browser.Jar = jar

	state, nonce := rand.Text(), rand.Text()
	auth := url.Values{
		"response_type": {"code"},
		"client_id":     {clientID},
		"redirect_uri":  {RedirectURI},
		"scope":         {"openid"},
		"state":         {state},
		"nonce":         {nonce},
	}
	loc, err := redirect(&browser, p.IssuerURL+"/oauth2/auth?"+auth.Encode())
	if err != nil {
		return "", fmt.Errorf("authorization request: %w", err)
	}
	loginChallenge := loc.Query().Get("login_challenge")
	if loginChallenge == "" {
		return "", fmt.Errorf("authorization request redirected to %s, not to the login page with a login_challenge", loc)
	}

	var accepted struct {
		RedirectTo string `json:"redirect_to"`
	}
	err = p.sendJSON(http.MethodPut,
		p.adminURL+"/admin/oauth2/auth/requests/login/accept?login_challenge="+url.QueryEscape(loginChallenge),
		map[string]any{"subject": l.Subject}, http.StatusOK, &accepted)
	if err != nil {
		return "", fmt.Errorf("accepting the login: %w", err)
	}
	loc, err = redirect(&browser, accepted.RedirectTo)
	if err != nil {
		return "", fmt.Errorf("after the login: %w", err)
	}
	consentChallenge := loc.Query().Get("consent_challenge")
	if consentChallenge == "" {
		return "", fmt.Errorf("after the login hydra redirected to %s, not to the consent page with a consent_challenge", loc)
	}

	claims := l.Claims
	if claims == nil {
		claims = map[string]any{}
	}
	err = p.sendJSON(http.MethodPut,
		p.adminURL+"/admin/oauth2/auth/requests/consent/accept?consent_challenge="+url.QueryEscape(consentChallenge),
		map[string]any{
			"grant_scope": []string{"openid"},
			"session":     map[string]any{"id_token": claims},
		}, http.StatusOK, &accepted)
	if err != nil {
		return "", fmt.Errorf("accepting the consent: %w", err)
	}
	loc, err = redirect(&browser, accepted.RedirectTo)
	if err != nil {
		return "", fmt.Errorf("after the consent: %w", err)
	}
	if got := strings.SplitN(loc.String(), "?", 2)[0]; got != RedirectURI {
		return "", fmt.Errorf("after the consent hydra redirected to %s, not to the client's %s", loc, RedirectURI)
	}
	code := loc.Query().Get("code")
	if code == "" || loc.Query().Get("state") != state {
		return "", fmt.Errorf("the client's redirect %s carries no code or another state than %q", loc, state)
	}

	form := url.Values{
		"grant_type":   {"authorization_code"},
		"code":         {code},
		"redirect_uri": {RedirectURI},
	}
	req, err := http.NewRequest(http.MethodPost, p.IssuerURL+"/oauth2/token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// RFC 6749 section 2.3.1: the client ID and secret are form-encoded
	// before they go into the basic credentials.
	req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	var tokens struct {
		IDToken string `json:"id_token"`
	}
	if err := p.do(req, http.StatusOK, &tokens); err != nil {
		return "", fmt.Errorf("token request: %w", err)
	}
	if tokens.IDToken == "" {
		return "", fmt.Errorf("the token response has no id_token")
	}
	if got, err := unverifiedClaim(tokens.IDToken, "nonce"); err != nil || got != nonce {
		return "", fmt.Errorf("the ID token's nonce is %v (%v), the request's %q", got, err, nonce)
	}
	return tokens.IDToken, nil
}

// redirect fetches u and returns where hydra redirects, without following it.
// An OAuth 2.0 error in the redirect is returned as an error.
func redirect(c *http.Client, u string) (*url.URL, error) {
	resp, err := c.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil, fmt.Errorf("GET %s: %s, not a redirect: %s", u, resp.Status, body)
	}
	loc, err := resp.Location()
	if err != nil {
		return nil, err
	}
	if e := loc.Query().Get("error"); e != "" {
		return nil, fmt.Errorf("hydra redirected with error %s: %s %s", e, loc.Query().Get("error_description"), loc.Query().Get("error_hint"))
	}
	return loc, nil
}

// sendJSON sends body as JSON and decodes the answer into into, which must
// have the status want.
func (p *Provider) sendJSON(method, u string, body any, want int, into any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, u, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return p.do(req, want, into)
}

func (p *Provider) getJSON(u string, into any) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	return p.do(req, http.StatusOK, into)
}

func (p *Provider) do(req *http.Request, want int, into any) error {
	req.Header.Set("Accept", "application/json")
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s (want %d): %s", req.Method, req.URL, resp.Status, want, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("%s %s: decoding %s: %w", req.Method, req.URL, body, err)
	}
	return nil
}

// unverifiedClaim reads one claim of a JWT without checking its signature;
// IDToken uses it only to check the nonce it sent came back.
func unverifiedClaim(jwt, name string) (any, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("not a JWS in compact form")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, err
	}
	return claims[name], nil
}
