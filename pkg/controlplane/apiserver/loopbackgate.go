package apiserver

import (
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
)

// firstConnGate holds the loopback client's requests back while its first
// one gets a connection, so that the others share that connection instead
// of each dialling its own.
//
// As the server starts serving, its post-start hooks and informers send
// twenty or more requests at once through the loopback client's one
// transport. net/http learns that a connection speaks HTTP/2, and can
// carry them all, only once its TLS handshake is done, so until then it
// dials a connection for every request waiting: 25–27 connections, each
// a TLS handshake (both sides of it in this process) of which all but one
// are thrown away, 30–40 ms of CPU at the moment the bootstrap hooks need
// it (docs/performance.md). Only the first request is waited for: once it
// has a connection, or an answer or an error, every request goes through
// as it comes.
type firstConnGate struct {
	started atomic.Bool
	once    sync.Once
	open    chan struct{}
}

func newFirstConnGate() *firstConnGate {
	return &firstConnGate{open: make(chan struct{})}
}

// wrap is a transport.WrapperFunc.
func (g *firstConnGate) wrap(rt http.RoundTripper) http.RoundTripper {
	return gatedRoundTripper{g: g, rt: rt}
}

func (g *firstConnGate) release() { g.once.Do(func() { close(g.open) }) }

type gatedRoundTripper struct {
	g  *firstConnGate
	rt http.RoundTripper
}

// RoundTrip sends the first request with a trace that opens the gate when
// it has a connection; later ones wait for that, or for their context.
func (t gatedRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	g := t.g
	select {
	case <-g.open:
		return t.rt.RoundTrip(req)
	default:
	}
	if g.started.CompareAndSwap(false, true) {
		defer g.release()
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { g.release() }}
		return t.rt.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	}
	select {
	case <-g.open:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return t.rt.RoundTrip(req)
}

// WrappedRoundTripper is the transport the gate wraps, for client-go's
// utilnet.CloseIdleConnectionsFor and the like.
func (t gatedRoundTripper) WrappedRoundTripper() http.RoundTripper { return t.rt }
