package freeport

import (
	"fmt"
	"net"
	"testing"
)

// TestGet: the ports are distinct, free, and outside the ephemeral range
// the kernel gives outgoing connections their local ports from.
func TestGet(t *testing.T) {
	lo, hi := portRange()
	seen := map[int]bool{}
	for range 50 {
		port := Get(t)
		if port < lo || port >= hi {
			t.Fatalf("port %d outside [%d, %d)", port, lo, hi)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		_ = l.Close()
	}
	// An outgoing connection's local port is never one of them.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if local := c.LocalAddr().(*net.TCPAddr).Port; local >= lo && local < hi {
		t.Errorf("an outgoing connection got local port %d, inside [%d, %d): the range overlaps the ephemeral one", local, lo, hi)
	}
}
