package certcache

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
)

// ca is a certificate authority for the tests.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t testing.TB) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &ca{cert: cert, key: key, pool: pool}
}

// client issues a client certificate for user in groups, valid until notAfter.
func (c *ca) client(t testing.TB, name string, groups []string, notAfter time.Time) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, key.Public(), c.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// counting counts the requests the real x509 authenticator saw.
type counting struct {
	authenticator.Request
	calls atomic.Int32
}

func (c *counting) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	c.calls.Add(1)
	return c.Request.AuthenticateRequest(req)
}

// fixture is the cache around k8s.io/apiserver's x509 authenticator, with
// the roots and the clock the test sets.
type fixture struct {
	*Authenticator
	verified *counting
	roots    atomic.Pointer[x509.CertPool]
	now      time.Time
}

func newFixture(roots *x509.CertPool) *fixture {
	f := &fixture{now: time.Now()}
	f.roots.Store(roots)
	verifyOptions := func() (x509.VerifyOptions, bool) {
		return x509.VerifyOptions{Roots: f.roots.Load(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}
	f.verified = &counting{Request: x509request.NewDynamic(verifyOptions, x509request.CommonNameUserConversion)}
	f.Authenticator = New(f.verified, verifyOptions, 16, time.Minute)
	f.Authenticator.now = func() time.Time { return f.now }
	return f
}

func request(chain ...*x509.Certificate) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1/api", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: chain}
	return req
}

// authenticate fails the test unless the request authenticates as name.
func (f *fixture) authenticate(t *testing.T, req *http.Request, name string) *authenticator.Response {
	t.Helper()
	resp, ok, err := f.AuthenticateRequest(req)
	if err != nil || !ok || resp.User.GetName() != name {
		t.Fatalf("want %s authenticated, got %v %v %v", name, resp, ok, err)
	}
	return resp
}

func TestVerifiesOncePerChain(t *testing.T) {
	ca := newCA(t)
	f := newFixture(ca.pool)
	alice := ca.client(t, "alice", []string{"devs"}, time.Now().Add(time.Hour))
	bob := ca.client(t, "bob", nil, time.Now().Add(time.Hour))
	for range 3 {
		resp := f.authenticate(t, request(alice), "alice")
		if !slices.Equal(resp.User.GetGroups(), []string{"devs"}) {
			t.Fatalf("groups %v", resp.User.GetGroups())
		}
		f.authenticate(t, request(bob), "bob")
	}
	if n := f.verified.calls.Load(); n != 2 {
		t.Fatalf("chains verified %d times, want once each (2)", n)
	}
}

func TestRejectionsAreNotRemembered(t *testing.T) {
	trusted, other := newCA(t), newCA(t)
	f := newFixture(trusted.pool)
	mallory := other.client(t, "mallory", nil, time.Now().Add(time.Hour))
	for range 2 {
		if resp, ok, err := f.AuthenticateRequest(request(mallory)); err == nil || ok {
			t.Fatalf("a certificate of another CA authenticated: %v %v %v", resp, ok, err)
		}
	}
	if n := f.verified.calls.Load(); n != 2 {
		t.Fatalf("rejected chain verified %d times, want every time (2)", n)
	}
}

func TestNewRootsVerifyAgain(t *testing.T) {
	old, rotated := newCA(t), newCA(t)
	f := newFixture(old.pool)
	alice := old.client(t, "alice", nil, time.Now().Add(time.Hour))
	f.authenticate(t, request(alice), "alice")
	// The client CA bundle changes to one without the old CA: alice's
	// certificate no longer authenticates, though it was accepted before.
	f.roots.Store(rotated.pool)
	if resp, ok, err := f.AuthenticateRequest(request(alice)); err == nil || ok {
		t.Fatalf("certificate of a CA no longer trusted authenticated: %v %v %v", resp, ok, err)
	}
}

func TestExpiry(t *testing.T) {
	ca := newCA(t)
	f := newFixture(ca.pool)
	// A certificate that expires within the cache's time to live.
	soon := ca.client(t, "soon", nil, time.Now().Add(10*time.Second))
	f.authenticate(t, request(soon), "soon")
	f.now = f.now.Add(5 * time.Second)
	f.authenticate(t, request(soon), "soon")
	if n := f.verified.calls.Load(); n != 1 {
		t.Fatalf("verified %d times before expiry, want 1", n)
	}
	// Past its NotAfter, it is verified again (and the verification, at
	// the real time, still accepts it): the entry lasted only until then.
	f.now = f.now.Add(6 * time.Second)
	f.authenticate(t, request(soon), "soon")
	if n := f.verified.calls.Load(); n != 2 {
		t.Fatalf("verified %d times after the certificate's NotAfter, want 2", n)
	}
	// A long-lived certificate is verified again after the time to live.
	long := ca.client(t, "long", nil, time.Now().Add(time.Hour))
	f.authenticate(t, request(long), "long")
	f.now = f.now.Add(2 * time.Minute)
	f.authenticate(t, request(long), "long")
	if n := f.verified.calls.Load(); n != 4 {
		t.Fatalf("verified %d times, want 4: the entry outlived its time to live", n)
	}
}

func TestResponsesAreCopies(t *testing.T) {
	ca := newCA(t)
	f := newFixture(ca.pool)
	alice := ca.client(t, "alice", []string{"devs"}, time.Now().Add(time.Hour))
	first := f.authenticate(t, request(alice), "alice")
	groups := first.User.GetGroups()
	groups[0] = "system:masters"
	second := f.authenticate(t, request(alice), "alice")
	if got := second.User.GetGroups(); !slices.Equal(got, []string{"devs"}) {
		t.Fatalf("a change to one answer leaked into the next: groups %v", got)
	}
}

func TestWithoutCertificate(t *testing.T) {
	f := newFixture(newCA(t).pool)
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1/api", nil)
	if resp, ok, err := f.AuthenticateRequest(req); err != nil || ok {
		t.Fatalf("request without TLS authenticated: %v %v %v", resp, ok, err)
	}
}

// BenchmarkAuthenticate compares verifying a client certificate on every
// request (k8s.io/apiserver's x509 authenticator) with the cache.
func BenchmarkAuthenticate(b *testing.B) {
	ca := newCA(b)
	alice := ca.client(b, "alice", []string{"devs"}, time.Now().Add(time.Hour))
	req := request(alice)
	verifyOptions := func() (x509.VerifyOptions, bool) {
		return x509.VerifyOptions{Roots: ca.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}
	verified := x509request.NewDynamic(verifyOptions, x509request.CommonNameUserConversion)
	for name, a := range map[string]authenticator.Request{
		"verify": verified,
		"cached": New(verified, verifyOptions, DefaultSize, DefaultTTL),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := a.AuthenticateRequest(req); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
