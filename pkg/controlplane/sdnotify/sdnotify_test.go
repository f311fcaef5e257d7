package sdnotify

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestNotifier(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	read := func() string {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		return string(buf[:n])
	}

	t.Setenv(envSocket, path)
	n := TakeFromEnv()
	if _, set := os.LookupEnv(envSocket); set || n.Socket != path {
		t.Fatalf("TakeFromEnv: socket %q, variable still set: %v", n.Socket, set)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	stop := n.Start(ctx, ready)
	close(ready)
	if got := read(); got != "READY=1" {
		t.Fatalf("got %q, want READY=1", got)
	}
	cancel()
	if got := read(); got != "STOPPING=1" {
		t.Fatalf("got %q, want STOPPING=1", got)
	}
	stop()

	// A component that returns on its own (a failure, not ctx) says
	// STOPPING=1 by its stop, which returns once it is sent: its process
	// may exit right after.
	stop = n.Start(context.Background(), closed())
	if got := read(); got != "READY=1" {
		t.Fatalf("got %q, want READY=1", got)
	}
	stop()
	// Already queued: a read that would wait has none to wait for.
	_ = conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	buf := make([]byte, 64)
	if c, err := conn.Read(buf); err != nil || string(buf[:c]) != "STOPPING=1" {
		t.Fatalf("stop returned before STOPPING=1 was sent: %q, %v", buf[:c], err)
	}

	// Stopped before ready: no READY=1, only STOPPING=1.
	stop = n.Start(context.Background(), make(chan struct{}))
	stop()
	if got := read(); got != "STOPPING=1" {
		t.Fatalf("got %q, want STOPPING=1", got)
	}

	// The zero Notifier sends nothing and does not block.
	(Notifier{}).Start(context.Background(), closed())()
}

// closed returns a closed channel: a component ready from the start.
func closed() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
