// Package sdnotify tells systemd how a gcp component is doing, for units
// of Type=notify: READY=1 once it is ready, STOPPING=1 when it begins to
// stop, written to the unix datagram socket systemd names in
// $NOTIFY_SOCKET. Without that variable (not under systemd) a Notifier
// sends nothing, so components use one unconditionally.
//
// Every part says both states one way, Notifier.Start with the Ready
// channel of the part's handle (etcd.Handle, apiserver.Handle,
// allinone.ControlPlane; for `gcp controllers`, the controller manager's
// OnAPIServerReached): the commands take the socket with TakeFromEnv and
// notify for what they run. Taking it matters for the API server: k8s.io/apiserver sends READY=1 by itself as
// soon as the server listens, before /readyz is 200, unless the variable
// is gone, so the library finds nothing to notify and gcp says READY=1
// once /readyz is 200.
package sdnotify

import (
	"context"
	"net"
	"os"

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

// Start tells systemd about the component beside it, in a goroutine:
// READY=1 once ready is closed, STOPPING=1 once ctx is done or the
// returned stop is called, whichever comes first; READY=1 is not sent
// after that. stop waits until STOPPING=1 is sent, so a component that
// defers it returns, and its process exits, only after systemd has heard.
// With the zero Notifier nothing runs and stop returns at once.
func (n Notifier) Start(ctx context.Context, ready <-chan struct{}) (stop func()) {
	if n.Socket == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Ready wins a tie with a stop: a component that was ready says so.
		select {
		case <-ready:
			n.send("READY=1")
		default:
			select {
			case <-ready:
				n.send("READY=1")
			case <-ctx.Done():
			}
		}
		<-ctx.Done()
		n.send("STOPPING=1")
	}()
	return func() {
		cancel()
		<-done
	}
}
