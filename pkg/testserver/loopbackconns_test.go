package testserver

import (
	"net"
	"sync/atomic"
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
)

// countingListener counts the connections it accepted.
type countingListener struct {
	net.Listener
	accepted *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// TestStartDialsFewConnections: a server becomes ready over a handful of
// connections, the loopback client's one and the test server's own,
// instead of the one per request that the post-start hooks and informers
// sent at once before the loopback client's first connection was up
// (25–27, each a TLS handshake).
func TestStartDialsFewConnections(t *testing.T) {
	t.Parallel()
	var accepted atomic.Int64
	Start(t, Options{APIServer: func(o *options.Options) {
		o.SecureServing.Listener = countingListener{o.SecureServing.Listener, &accepted}
	}})
	if n := accepted.Load(); n > 6 {
		t.Errorf("%d connections accepted until ready, want at most 6", n)
	}
}
