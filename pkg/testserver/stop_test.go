package testserver

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/url"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStopClosesIdleConnections: Stop does not wait for clients to close
// their connections. A client-go connection that was idle, and a
// connection that negotiated HTTP/2 and has sent nothing yet, used to hold
// it for a second (x/net/http2's GOAWAY timeout) and ten seconds (its
// preface timeout); Stop closes them. The bound is far above what Stop
// takes and far below the preface timeout: it tells hanging from not.
func TestStopClosesIdleConnections(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{})
	if _, err := s.Client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // only the handshake matters
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stop waits for a client that sent nothing")
	}
	// The server's SETTINGS frame may still be unread; then EOF.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, conn); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the connection is still open after Stop")
	}
}
