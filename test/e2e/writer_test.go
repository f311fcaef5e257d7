package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcp-project/gcp/test/poll"
)

// writer creates ConfigMaps one after another through one API server
// while a test does harm, and remembers which creates were acknowledged,
// so that the test can check afterwards that none of them was lost. It is
// bounded: it stops after max writes or when stopped.
type writer struct {
	t      testing.TB
	client kubernetes.Interface
	ns     string
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	acked []ack // in the order acknowledged
	fails int
}

// ack is one acknowledged create: the object's index and when its
// response arrived.
type ack struct {
	i  int
	at time.Time
}

// writerLabel marks a writer's ConfigMaps.
const writerLabel = "e2e.gcp.dev/writer"

// startWriter starts a writer through server with the admin kubeconfig,
// in namespace ns (which must exist), pausing pause between writes (and
// at least 100 ms after a failure), at most limit writes.
func startWriter(t testing.TB, kubeconfig, server, ns string, pause time.Duration, limit int) *writer {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags(server, kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &writer{t: t, client: client, ns: ns, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; i < limit && ctx.Err() == nil; i++ {
			reqCtx, cancelReq := context.WithTimeout(ctx, 15*time.Second)
			_, err := client.CoreV1().ConfigMaps(ns).Create(reqCtx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%d", i), Labels: map[string]string{writerLabel: "true"}},
				Data:       map[string]string{"i": strconv.Itoa(i)},
			}, metav1.CreateOptions{})
			cancelReq()
			if err != nil && ctx.Err() != nil {
				return // stopped, not failed
			}
			w.mu.Lock()
			if err == nil {
				w.acked = append(w.acked, ack{i, time.Now()})
			} else {
				w.fails++
			}
			w.mu.Unlock()
			wait := pause
			if err != nil {
				wait = max(pause, 100*time.Millisecond)
			}
			if wait > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

// stop stops the writer and waits for its last request.
func (w *writer) stop() {
	w.cancel()
	<-w.done
}

// count returns how many creates were acknowledged so far.
func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// waitMore waits until n more creates than now are acknowledged.
func (w *writer) waitMore(n int, timeout time.Duration) {
	w.t.Helper()
	want := w.count() + n
	poll.Until(w.t, 200*time.Millisecond, timeout, func() error {
		if got := w.count(); got < want {
			return fmt.Errorf("writer: %d creates acknowledged, waiting for %d (%d failed)", got, want, w.failures())
		}
		return nil
	})
}

func (w *writer) failures() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fails
}

// firstAckAfter returns how long after t0 the first acknowledgement came
// (the outage a fault caused, as the writer saw it).
func (w *writer) firstAckAfter(t0 time.Time) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.acked {
		if a.at.After(t0) {
			return a.at.Sub(t0), true
		}
	}
	return 0, false
}

// verify stops the writer and fails the test unless every acknowledged
// create is there, with its value, read through server.
func (w *writer) verify(kubeconfig, server string) {
	w.t.Helper()
	w.stop()
	w.verifyFirst(kubeconfig, server, w.count())
}

// verifyFirst fails the test unless the first n acknowledged creates are
// there, with their values, read through server (a restored copy, say).
func (w *writer) verifyFirst(kubeconfig, server string, n int) {
	w.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags(server, kubeconfig)
	if err != nil {
		w.t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	list, err := client.CoreV1().ConfigMaps(w.ns).List(context.Background(), metav1.ListOptions{LabelSelector: writerLabel})
	if err != nil {
		w.t.Fatalf("list the writer's configmaps: %v", err)
	}
	have := map[string]string{}
	for _, cm := range list.Items {
		have[cm.Name] = cm.Data["i"]
	}
	w.mu.Lock()
	acked := w.acked[:n]
	w.mu.Unlock()
	lost := 0
	for _, a := range acked {
		if have[fmt.Sprintf("w-%d", a.i)] != strconv.Itoa(a.i) {
			lost++
		}
	}
	if lost > 0 {
		w.t.Errorf("writer: %d of %d acknowledged creates lost", lost, n)
	}
	w.t.Logf("writer: %d acknowledged creates checked, all there; %d creates failed", n, w.failures())
}
