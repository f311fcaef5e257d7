package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestWatchInvariants: with writers updating objects concurrently, a watch
// sees every change of every object exactly once and in order (no gap, no
// duplicate, no reordering); a watch resumed from any resourceVersion it
// saw delivers exactly the rest (--etcd-compaction-interval 1s runs
// compaction under the watches all along); after a restart, a watch from a
// resourceVersion before it is 410 Gone.
func TestWatchInvariants(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := startAllInOne(t, dir, "--etcd-compaction-interval", "1s")
	cfg, err := clientcmd.BuildConfigFromFlags("", a.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a.kubectl("create", "namespace", "watched")
	cms := client.CoreV1().ConfigMaps("watched")

	const objects, updates = 4, 60
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for o := range objects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("obj-%d", o)
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			for n := 1; n <= updates; {
				cm.Data["n"] = strconv.Itoa(n)
				updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
				switch {
				case err == nil:
					cm, n = updated, n+1
				case apierrors.IsConflict(err):
					if cm, err = cms.Get(ctx, name, metav1.GetOptions{}); err != nil {
						t.Error(err)
						return
					}
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()

	type seen struct {
		name string
		n    int
		rv   string
	}
	collect := func(w watch.Interface, want int) []seen {
		t.Helper()
		defer w.Stop()
		var events []seen
		timeout := time.After(60 * time.Second)
		for len(events) < want {
			select {
			case e, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch closed after %d of %d events", len(events), want)
				}
				cm, isCM := e.Object.(*corev1.ConfigMap)
				if !isCM {
					t.Fatalf("watch event %s: %#v", e.Type, e.Object)
				}
				n, _ := strconv.Atoi(cm.Data["n"])
				events = append(events, seen{cm.Name, n, cm.ResourceVersion})
			case <-timeout:
				t.Fatalf("%d of %d events after 60 s", len(events), want)
			}
		}
		return events
	}
	total := objects * (updates + 1)
	events := collect(w, total)
	next := map[string]int{}
	var lastRV uint64
	for _, e := range events {
		if e.n != next[e.name] {
			t.Fatalf("%s: event with n=%d, want n=%d (a gap, a duplicate or a reordering)", e.name, e.n, next[e.name])
		}
		next[e.name]++
		rv, err := strconv.ParseUint(e.rv, 10, 64)
		if err != nil || rv <= lastRV {
			t.Fatalf("resourceVersion %s after %d: not increasing", e.rv, lastRV)
		}
		lastRV = rv
	}

	// Resumed from a resourceVersion seen in the middle: exactly the rest.
	from := len(events) / 2
	resumed, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: events[from].rv})
	if err != nil {
		t.Fatal(err)
	}
	rest := collect(resumed, total-from-1)
	for i, e := range rest {
		if want := events[from+1+i]; e != want {
			t.Fatalf("resumed watch event %d: %+v, want %+v", i, e, want)
		}
	}

	// After a restart the server keeps no history from before it (etcd's
	// is compacted, and the watch cache starts afresh): a watch from the
	// first resourceVersion is 410 Gone, and the client relists.
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	b := startAllInOne(t, dir, "--etcd-compaction-interval", "1s")
	cfg, err = clientcmd.BuildConfigFromFlags("", b.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	old, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("watched").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err == nil {
		defer old.Stop()
		select {
		case e := <-old.ResultChan():
			if status, ok := e.Object.(*metav1.Status); !ok || e.Type != watch.Error || status.Code != 410 {
				t.Fatalf("watch from a resourceVersion before the restart: %s %#v, want 410", e.Type, e.Object)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("watch from a resourceVersion before the restart: no event, want 410")
		}
	} else if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("watch from a resourceVersion before the restart: %v, want 410", err)
	}
}
