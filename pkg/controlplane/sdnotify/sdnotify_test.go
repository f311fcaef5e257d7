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
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.WhenReady(ctx, func(context.Context) bool {
			select {
			case <-ready:
				return true
			default:
				return false
			}
		})
	}()
	close(ready)
	if got := read(); got != "READY=1" {
		t.Fatalf("got %q, want READY=1", got)
	}
	cancel()
	if got := read(); got != "STOPPING=1" {
		t.Fatalf("got %q, want STOPPING=1", got)
	}
	<-done

	// The zero Notifier sends nothing and does not block.
	(Notifier{}).Ready()
	(Notifier{}).WhenReady(context.Background(), func(context.Context) bool { return true })
}
