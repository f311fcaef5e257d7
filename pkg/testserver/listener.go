package testserver

import (
	"net"
	"sync"
)

// closingListener closes every connection it accepted when it is closed
// itself, which the API server's HTTP server does as it begins to shut
// down.
//
// The generic API server shuts its HTTP/2 server down gracefully, and
// golang.org/x/net/http2 keeps each connection open for a second after
// its GOAWAY unless the client closes it first; a client-go connection
// that was idle then never does, nor do the server's own loopback clients.
// Served over HTTP/1.1 instead, net/http waits five seconds for a
// connection that was dialled but has not sent its first request. Either
// way every Stop took a second or more. A test server is stopped when its
// test is over, so nothing is left to drain: closing the connections ends
// the wait at once, as killing envtest's kube-apiserver does.
type closingListener struct {
	net.Listener

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

func newClosingListener(l net.Listener) *closingListener {
	return &closingListener{Listener: l, conns: map[net.Conn]struct{}{}}
}

// Accept tracks the connection until it is closed.
func (l *closingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: c, l: l}
	l.conns[tc] = struct{}{}
	return tc, nil
}

// Close stops accepting and closes every connection still open.
func (l *closingListener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.closed = true
	conns := l.conns
	l.conns = map[net.Conn]struct{}{}
	l.mu.Unlock()
	for c := range conns {
		_ = c.(*trackedConn).Conn.Close()
	}
	return err
}

type trackedConn struct {
	net.Conn
	l    *closingListener
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
