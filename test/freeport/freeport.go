// Package freeport hands tests loopback ports that nothing listens on, for
// servers (gcp's, etcd members, an OpenID provider) that must be told their
// port before they start.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
)

// handedOut remembers the ports Get returned, so that two servers of one
// test binary (two etcd members' peer ports, say) never get the same one.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Get returns a loopback port nothing listens on and that no earlier call
// in this test binary returned.
//
// The port is outside the kernel's ephemeral range, from which it picks
// the local port of every outgoing connection and of every listen on :0.
// A server a test stops and starts again on its port (an etcd member, an
// API server after SIGKILL) leaves the port free for a moment; a port from
// the ephemeral range may then become the local end of some other
// process's connection, and the server, started again, cannot listen on
// it for as long as that connection lives.
func Get(t testing.TB) int {
	t.Helper()
	lo, hi := portRange()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 1000 {
		port := lo + rand.IntN(hi-lo)
		if handedOut.ports[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		handedOut.ports[port] = true
		return port
	}
	t.Fatalf("no free loopback port in [%d, %d) after 1000 tries", lo, hi)
	return 0
}

// portRange returns the ports Get picks from, [lo, hi): those below the
// ephemeral range and above the well-known and commonly configured ones,
// or, where the ephemeral range starts too low to leave room, those above
// it.
func portRange() (lo, hi int) {
	ephemeralLo, ephemeralHi := 32768, 60999 // Linux's default
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var l, h int
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &l, &h); err == nil && l > 0 && h >= l {
			ephemeralLo, ephemeralHi = l, h
		}
	}
	const floor = 10000
	if ephemeralLo-floor >= 2000 {
		return floor, ephemeralLo
	}
	if 65536-(ephemeralHi+1) >= 2000 {
		return ephemeralHi + 1, 65536
	}
	return floor, 65536 // no room outside it: any port will do
}
