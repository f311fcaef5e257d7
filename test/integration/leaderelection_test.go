package integration

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// leStub is a controller that says when it starts and when it stops.
type leStub struct{ started, stopped chan struct{} }

func (s *leStub) Name() string { return "stub-controller" }

func (s *leStub) Run(ctx context.Context) {
	close(s.started)
	<-ctx.Done()
	close(s.stopped)
}

// leManager is a controller manager run by leRun: done is closed when
// Run has returned err.
type leManager struct {
	addr string
	done chan struct{}
	err  error
}

// leRun runs a leader-elected manager of descriptor on the Lease
// kube-system/lease against s, serving on a loopback port when serve is
// set, with durations short enough for a test, and stops it at the end of
// the test.
func leRun(t *testing.T, s *testserver.Server, lease string, serve bool, descriptor controllers.Descriptor) *leManager {
	t.Helper()
	o := controllers.NewOptions([]controllers.Descriptor{descriptor})
	o.Kubeconfig = s.AdminKubeconfig
	o.UseServiceAccountCredentials = false
	o.Generic.ClientConnection.QPS, o.Generic.ClientConnection.Burst = -1, -1
	le := &o.Generic.LeaderElection
	le.LeaderElect, le.ResourceName = true, lease
	le.LeaseDuration.Duration, le.RenewDeadline.Duration, le.RetryPeriod.Duration = 3*time.Second, 2*time.Second, 200*time.Millisecond
	o.SecureServing.BindPort = 0
	m := &leManager{done: make(chan struct{})}
	if serve {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		o.SecureServing.Listener, o.SecureServing.BindPort = l, l.Addr().(*net.TCPAddr).Port
		m.addr = l.Addr().String()
	}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { defer close(m.done); m.err = controllers.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-m.done:
		case <-time.After(30 * time.Second):
			t.Error("the controller manager did not stop within 30s of its context")
		}
	})
	return m
}

// leHolder is the holder of the Lease kube-system/name, "" if none.
func leHolder(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestControllersExitOnLeaseLoss: a leader-elected controller manager
// that fails to renew its Lease (another candidate holds it now) stops its
// controllers and its serving and returns "leader election lost", with
// the secure port on or off, instead of hanging with /healthz ok (issue
// 28, defect 3: the deferred wait for serving ran before the cancel that
// stops it). `gcp controllers` then exits 1 and its supervisor restarts
// it into the election.
func TestControllersExitOnLeaseLoss(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	for _, serve := range []bool{true, false} {
		name := map[bool]string{true: "serving", false: "not-serving"}[serve]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lease := "lease-loss-" + name
			stub := &leStub{started: make(chan struct{}), stopped: make(chan struct{})}
			m := leRun(t, s, lease, serve, controllers.Descriptor{Name: stub.Name(),
				New: func(context.Context, controllers.Context) (controllers.Controller, error) { return stub, nil }})
			select {
			case <-stub.started:
			case <-m.done:
				t.Fatalf("the manager returned before leading: %v", m.err)
			case <-time.After(60 * time.Second):
				t.Fatal("the controllers did not start within 60s")
			}
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the manager's self-signed serving certificate
			if serve {
				resp, err := client.Get("https://" + m.addr + "/healthz")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("/healthz while leading: %d", resp.StatusCode)
				}
			}

			// Another candidate takes the Lease, as one does when this
			// manager's renewals stop reaching the API server for longer
			// than the lease duration.
			const thief = "another-candidate"
			leases := s.Client.CoordinationV1().Leases("kube-system")
			for {
				l, err := leases.Get(context.Background(), lease, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				holder, seconds, now := thief, int32(3600), metav1.NewMicroTime(time.Now())
				l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &seconds, &now
				if _, err = leases.Update(context.Background(), l, metav1.UpdateOptions{}); err == nil {
					break
				}
			}

			select {
			case <-m.done:
				if m.err == nil || !strings.Contains(m.err.Error(), "leader election lost") {
					t.Fatalf("Run after losing the lease: %v, want leader election lost", m.err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the controller manager still runs 30s after losing its lease")
			}
			select {
			case <-stub.stopped:
			default:
				t.Error("Run returned while its controller still ran")
			}
			if serve {
				if conn, err := net.DialTimeout("tcp", m.addr, 5*time.Second); err == nil {
					conn.Close()
					t.Error("the manager still serves after Run returned")
				}
			}
			if h := leHolder(t, s.Client, lease); h != thief {
				t.Errorf("lease holder %q after the loss, want %q (untouched)", h, thief)
			}
		})
	}
}

// TestControllersLeaderElectedStartFailure: a controller that fails to
// build under leader election makes Run return its error and release the
// Lease, instead of leaving the manager holding the Lease with nothing
// running.
func TestControllersLeaderElectedStartFailure(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	const lease = "start-failure"
	m := leRun(t, s, lease, true, controllers.Descriptor{Name: "broken-controller",
		New: func(context.Context, controllers.Context) (controllers.Controller, error) {
			return nil, errors.New("cannot build")
		}})
	select {
	case <-m.done:
		if m.err == nil || !strings.Contains(m.err.Error(), "cannot build") {
			t.Fatalf("Run: %v, want the controller's error", m.err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the controller manager still runs 60s after its controller failed to build")
	}
	if h := leHolder(t, s.Client, lease); h != "" {
		t.Errorf("lease still held by %q after Run returned", h)
	}
}
