// Package certcache remembers the client certificates the x509
// authenticator accepted, so that a client's certificate chain is verified
// once a while instead of on every request.
//
// k8s.io/apiserver asks for client certificates in the TLS handshake
// without verifying them there; its x509 authenticator verifies the chain
// against the client CA on every request, which is a signature check per
// certificate in the chain. Under load that is about a tenth of the API
// server's CPU (docs/performance.md). A client sends many requests over one
// certificate, so the answer for a chain is kept, keyed by the chain's
// bytes and by the CA pool it was verified against, until the earliest
// NotAfter in the chain or a short time to live, whichever comes first.
// A new client CA bundle is a new pool, so every chain is verified again
// against it. Only acceptances are kept: a rejected chain is verified, and
// rejected, every time.
package certcache

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"maps"
	"net/http"
	"slices"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/lru"
)

// Defaults for New: how many chains are remembered and for how long.
const (
	DefaultSize = 4096
	DefaultTTL  = 30 * time.Second
)

// Authenticator is an x509 authenticator that answers from its cache for
// a chain it accepted recently.
type Authenticator struct {
	verified      authenticator.Request
	verifyOptions func() (x509.VerifyOptions, bool)
	ttl           time.Duration
	now           func() time.Time
	cache         *lru.Cache
}

// New wraps verified, an x509 authenticator (k8s.io/apiserver's
// x509.NewDynamic) that verifies against the roots verifyOptions returns,
// the same function it was built with. It remembers up to size accepted
// chains, each for at most ttl.
func New(verified authenticator.Request, verifyOptions func() (x509.VerifyOptions, bool), size int, ttl time.Duration) *Authenticator {
	return &Authenticator{verified: verified, verifyOptions: verifyOptions, ttl: ttl, now: time.Now, cache: lru.New(size)}
}

// key names a certificate chain as verified against a CA pool.
type key struct {
	chain [sha256.Size]byte
	roots *x509.CertPool
}

type entry struct {
	response *authenticator.Response
	expires  time.Time
}

// AuthenticateRequest answers as the wrapped authenticator would.
func (a *Authenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return a.verified.AuthenticateRequest(req)
	}
	opts, ok := a.verifyOptions()
	if !ok || opts.Roots == nil {
		return a.verified.AuthenticateRequest(req)
	}
	chain := req.TLS.PeerCertificates
	k := key{chain: digest(chain), roots: opts.Roots}
	now := a.now()
	if v, ok := a.cache.Get(k); ok {
		e := v.(entry)
		if now.Before(e.expires) {
			return copyResponse(e.response), true, nil
		}
		a.cache.Remove(k)
	}
	resp, ok, err := a.verified.AuthenticateRequest(req)
	if err != nil || !ok || resp == nil {
		return resp, ok, err
	}
	expires := now.Add(a.ttl)
	for _, c := range chain {
		if c.NotAfter.Before(expires) {
			expires = c.NotAfter
		}
	}
	a.cache.Add(k, entry{response: copyResponse(resp), expires: expires})
	return resp, ok, err
}

// digest hashes the certificates of a chain, each with its length, so
// that two different chains never have the same input.
func digest(chain []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	for _, c := range chain {
		binary.BigEndian.PutUint64(n[:], uint64(len(c.Raw)))
		h.Write(n[:])
		h.Write(c.Raw)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// copyResponse returns a response nothing else holds: the request's
// filters add groups and may keep what they are given.
func copyResponse(r *authenticator.Response) *authenticator.Response {
	out := &authenticator.Response{Audiences: slices.Clone(r.Audiences)}
	if r.User != nil {
		extra := maps.Clone(r.User.GetExtra())
		for k, v := range extra {
			extra[k] = slices.Clone(v)
		}
		out.User = &user.DefaultInfo{
			Name:   r.User.GetName(),
			UID:    r.User.GetUID(),
			Groups: slices.Clone(r.User.GetGroups()),
			Extra:  extra,
		}
	}
	return out
}
