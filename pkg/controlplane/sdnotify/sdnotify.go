// Package sdnotify tells systemd how a gcp component is doing, for units
// of Type=notify: READY=1 once it is ready, STOPPING=1 when it begins to
// stop, written to the unix datagram socket systemd names in
// $NOTIFY_SOCKET. Without that variable (not under systemd) a Notifier
// sends nothing, so components use one unconditionally.
//
// k8s.io/apiserver sends READY=1 by itself as soon as the server listens,
// before /readyz is 200, and then unsets $NOTIFY_SOCKET. `gcp apiserver`
// and `gcp start` take the variable first (TakeFromEnv), so the library
// finds nothing to notify, and send READY=1 themselves once /readyz is 200.
package sdnotify

import (
	"context"
	"net"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// envSocket is the variable systemd sets for Type=notify units.
const envSocket = "NOTIFY_SOCKET"

// Notifier sends states to one notify socket; the zero value sends
// nothing.
type Notifier struct {
	// Socket is the datagram socket's path ("@name" for an abstract one).
	Socket string
}

// FromEnv returns a Notifier for $NOTIFY_SOCKET.
func FromEnv() Notifier { return Notifier{Socket: os.Getenv(envSocket)} }

// TakeFromEnv returns a Notifier for $NOTIFY_SOCKET and unsets the
// variable, so nothing else in the process (k8s.io/apiserver) notifies
// before the caller decides the component is ready.
func TakeFromEnv() Notifier {
	n := FromEnv()
	_ = os.Unsetenv(envSocket)
	return n
}

// Ready tells systemd the component is ready.
func (n Notifier) Ready() { n.send("READY=1") }

// Stopping tells systemd the component is shutting down.
func (n Notifier) Stopping() { n.send("STOPPING=1") }

func (n Notifier) send(state string) {
	if n.Socket == "" {
		return
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.Socket, Net: "unixgram"})
	if err == nil {
		_, err = conn.Write([]byte(state))
		_ = conn.Close()
	}
	if err != nil {
		klog.ErrorS(err, "Notifying systemd", "state", state, "socket", n.Socket)
		return
	}
	klog.V(2).InfoS("Notified systemd", "state", state)
}

// readyPoll is how often WhenReady checks.
const readyPoll = 100 * time.Millisecond

// WhenReady sends READY=1 once ready reports true, checking until ctx is
// done, then STOPPING=1 when ctx is done. Run it in a goroutine beside
// the component; with the zero Notifier it only waits.
func (n Notifier) WhenReady(ctx context.Context, ready func(context.Context) bool) {
	if n.Socket == "" {
		return
	}
	err := wait.PollUntilContextCancel(ctx, readyPoll, true, func(ctx context.Context) (bool, error) {
		return ready(ctx), nil
	})
	if err == nil {
		n.Ready()
	}
	<-ctx.Done()
	n.Stopping()
}

// Readyz is a readiness check for WhenReady: GET /readyz with c answers 200.
func Readyz(c rest.Interface) func(context.Context) bool {
	return func(ctx context.Context) bool {
		var status int
		c.Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		return status == http.StatusOK
	}
}
