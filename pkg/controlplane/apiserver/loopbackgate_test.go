package apiserver

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// gateServer is an HTTPS server speaking HTTP/2 that counts the
// connections it accepted, and a client-go config trusting it.
func gateServer(t *testing.T, handler http.Handler) (*rest.Config, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(handler)
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, &conns
}

// TestFirstConnGate: twenty requests sent at once through one client-go
// transport, as the post-start hooks and informers send theirs, share one
// connection behind the gate; without it each dialled its own.
func TestFirstConnGate(t *testing.T) {
	t.Parallel()
	for _, gated := range []bool{false, true} {
		cfg, conns := gateServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor != 2 {
				t.Errorf("request over %s, want HTTP/2", r.Proto)
			}
		}))
		if gated {
			cfg.Wrap(newFirstConnGate().wrap)
		}
		client, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 20 {
			wg.Go(func() {
				<-start
				res, err := client.Get(cfg.Host)
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
			})
		}
		close(start)
		wg.Wait()
		switch n := conns.Load(); {
		case gated && n != 1:
			t.Errorf("gated: %d connections, want 1", n)
		case !gated && n < 2:
			t.Logf("ungated: %d connection; the gate has nothing to show on this run", n)
		}
	}
}

// TestFirstConnGateFirstFails: when the first request gets no connection,
// the others go on (and fail on their own) instead of waiting; a request
// waiting for the gate ends with its context.
func TestFirstConnGateFirstFails(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every dial is refused
	cfg := &rest.Config{Host: "https://" + addr, Timeout: 5 * time.Second}
	cfg.Wrap(newFirstConnGate().wrap)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := client.Get(cfg.Host); err == nil {
			t.Fatal("request to a closed port succeeded")
		}
	}

	// A gate whose first request has not got a connection yet.
	g := newFirstConnGate()
	g.started.Store(true)
	rt := g.wrap(http.DefaultTransport)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host, nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting request ended with %v, want its context's deadline", err)
	}
}
