// Package sdnotify tells systemd how a gcp component is doing, for units
// of Type=notify: READY=1 once it is ready, STOPPING=1 when it begins to
// stop, written to the unix datagram socket systemd names in
// $NOTIFY_SOCKET. Without that variable (not under systemd) a Notifier
// sends nothing, so components use one unconditionally.
//
// Every part says both states one way, Notifier.Start beside the part's
// Run: the commands take the socket with TakeFromEnv and hand the
// Notifier to what they run (apiserver.Run and etcd.Run take it as an
// argument, controllers.Config and allinone.Options hold it). Taking it
// matters for the API server: k8s.io/apiserver sends READY=1 by itself as
// soon as the server listens, before /readyz is 200, unless the variable
// is gone, so the library finds nothing to notify and gcp says READY=1
// once /readyz is 200.
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

// TakeFromEnv returns a Notifier for $NOTIFY_SOCKET and unsets the
// variable, so nothing else in the process (k8s.io/apiserver) notifies
// before the caller decides the component is ready.
func TakeFromEnv() Notifier {
	n := Notifier{Socket: os.Getenv(envSocket)}
	_ = os.Unsetenv(envSocket)
	return n
}

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

// readyPoll is how often Start checks whether the component is ready.
const readyPoll = 100 * time.Millisecond

// Start tells systemd about the component beside it, in a goroutine:
// READY=1 once ready reports true (checked at once, then every 100 ms),
// STOPPING=1 once ctx is done or the returned stop is called, whichever
// comes first; READY=1 is not sent after that. stop waits until
// STOPPING=1 is sent, so a component that defers it returns, and its
// process exits, only after systemd has heard. With the zero Notifier
// nothing runs and stop returns at once.
func (n Notifier) Start(ctx context.Context, ready func(context.Context) bool) (stop func()) {
	if n.Socket == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := wait.PollUntilContextCancel(ctx, readyPoll, true, func(ctx context.Context) (bool, error) {
			return ready(ctx), nil
		})
		if err == nil {
			n.send("READY=1")
		}
		<-ctx.Done()
		n.send("STOPPING=1")
	}()
	return func() {
		cancel()
		<-done
	}
}

// Now is a readiness check for Start: ready at once, for a component
// that starts Start only when it serves.
func Now(context.Context) bool { return true }

// Readyz is a readiness check for Start: GET /readyz with c answers 200.
func Readyz(c rest.Interface) func(context.Context) bool {
	return func(ctx context.Context) bool {
		var status int
		c.Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		return status == http.StatusOK
	}
}
