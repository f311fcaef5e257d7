// Package freeport hands tests loopback ports that nothing listens on, for
// servers (gcp's, etcd members, an OpenID provider) that must be told their
// port before they start.
package freeport

import (
	"net"
	"sync"
	"testing"
)

// handedOut remembers the ports Get returned: the kernel may give a port
// just closed to the next listen on :0, and two servers of one test binary
// (two etcd members' peer ports, say) would then get the same one.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Get returns a loopback port nothing listens on and that no earlier call
// in this test binary returned.
func Get(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
}
