package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Lists and watch delivery are timed one request at a time, and a single
// server's list latency drifts by a quarter between runs a minute apart.
// So when both stacks are measured, they run side by side for these, and
// each list and each watched create alternates between them: a drift of
// the machine lands on both alike. With one stack (--only), the same
// requests run against it alone.

// listKinds are the lists timed: from the watch cache, and consistent.
var listKinds = []struct{ name, rv string }{{"rv=0", "0"}, {"consistent", ""}}

// reads are the list and watch timings of one stack.
type reads struct {
	lists map[int]map[string]result // by ConfigMap count, then kind
	watch result
}

// pairedShare is, for each list and for watch delivery, the share of
// pairs in which the first stack answered sooner than the second.
type pairedShare map[string]float64

// listKey and watchKey name a figure in a pairedShare.
func listKey(n int, kind string) string { return fmt.Sprintf("list %d %s", n, kind) }

const watchKey = "watch"

// measureReads fills each stack with each of the list sizes of
// ConfigMaps and times reps lists of each size and kind and the delivery
// of watchEvents creates, alternating between the stacks request by
// request (and which goes first, pair by pair).
func measureReads(cfgs []*rest.Config, sizes []int, reps, watchEvents int) ([]reads, pairedShare, error) {
	out := make([]reads, len(cfgs))
	for i := range out {
		out[i].lists = map[int]map[string]result{}
	}
	share := pairedShare{}
	clients := make([]kubernetes.Interface, len(cfgs))
	for i, cfg := range cfgs {
		clients[i] = clientset(cfg)
	}
	for _, n := range sizes {
		ns := fmt.Sprintf("list-%d", n)
		for i, cfg := range cfgs {
			log("%s: creating %d ConfigMaps to list", cfgs[i].Host, n)
			if err := fill(cfg, ns, n); err != nil {
				return nil, nil, err
			}
		}
		for _, kind := range listKinds {
			byStack, faster, err := alternate(len(cfgs), reps, func(stack int) (time.Duration, error) {
				start := time.Now()
				list, err := clients[stack].CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{ResourceVersion: kind.rv})
				if err == nil && len(list.Items) < n { // and kube-root-ca.crt
					err = fmt.Errorf("listed %d, want %d", len(list.Items), n)
				}
				return time.Since(start), err
			})
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", listKey(n, kind.name), err)
			}
			share[listKey(n, kind.name)] = faster
			for i := range cfgs {
				if out[i].lists[n] == nil {
					out[i].lists[n] = map[string]result{}
				}
				out[i].lists[n][kind.name] = byStack[i]
			}
		}
	}
	watchers := make([]*watcher, len(cfgs))
	for i, cfg := range cfgs {
		w, err := newWatcher(cfg)
		if err != nil {
			return nil, nil, err
		}
		defer w.stop()
		watchers[i] = w
	}
	byStack, faster, err := alternate(len(cfgs), watchEvents, func(stack int) (time.Duration, error) {
		return watchers[stack].deliver()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", watchKey, err)
	}
	share[watchKey] = faster
	for i := range cfgs {
		out[i].watch = byStack[i]
	}
	return out, share, nil
}

// alternate calls timed reps times for each of stacks stacks, one stack
// after the other, starting with a different one each time, and returns
// each stack's latencies and, with two stacks, the share of the reps in
// which stack 0 was faster than stack 1. It stops at the first error.
func alternate(stacks, reps int, timed func(stack int) (time.Duration, error)) (byStack []result, faster float64, err error) {
	ls := make([]latencies, stacks)
	wins := 0
	for r := range reps {
		ds := make([]time.Duration, stacks)
		for j := range stacks {
			stack := (r + j) % stacks
			d, err := timed(stack)
			if err != nil {
				return nil, 0, err
			}
			ds[stack] = d
			ls[stack].add(d, nil)
		}
		if stacks == 2 && ds[0] < ds[1] {
			wins++
		}
	}
	byStack = make([]result, stacks)
	for i := range ls {
		byStack[i] = ls[i].result(0)
	}
	if stacks == 2 && reps > 0 {
		faster = float64(wins) / float64(reps)
	}
	return byStack, faster, nil
}

// fill creates n ConfigMaps in ns, 16 clients at a time.
func fill(cfg *rest.Config, ns string, n int) error {
	if err := ensureNamespace(clientset(cfg), ns); err != nil {
		return err
	}
	workers := make([]kubernetes.Interface, 16)
	for i := range workers {
		workers[i] = clientset(cfg)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(workers))
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += len(workers) {
				if _, err := workers[w].CoreV1().ConfigMaps(ns).Create(context.Background(), configMap(fmt.Sprintf("c-%d", i)), metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// watcher creates ConfigMaps in a namespace it watches and times each
// from its create request to its ADDED event.
type watcher struct {
	client kubernetes.Interface
	w      watch.Interface
	added  chan string // names of ADDED ConfigMaps
	next   int
}

const watchNamespace = "watch"

func newWatcher(cfg *rest.Config) (*watcher, error) {
	c := clientset(cfg)
	if err := ensureNamespace(c, watchNamespace); err != nil {
		return nil, err
	}
	w, err := clientset(cfg).CoreV1().ConfigMaps(watchNamespace).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	wt := &watcher{client: c, w: w, added: make(chan string, 16)}
	go func() {
		defer close(wt.added)
		for ev := range w.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Added {
				wt.added <- cm.Name
			}
		}
	}()
	return wt, nil
}

// deliver creates the next ConfigMap and waits for its event: one create
// in flight at a time, so each delivery is timed on an otherwise idle
// server.
func (wt *watcher) deliver() (time.Duration, error) {
	name := fmt.Sprintf("w-%d", wt.next)
	wt.next++
	start := time.Now()
	if _, err := wt.client.CoreV1().ConfigMaps(watchNamespace).Create(context.Background(), configMap(name), metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case got, ok := <-wt.added:
			if !ok {
				return 0, fmt.Errorf("the watch closed")
			}
			if got == name {
				return time.Since(start), nil
			}
		case <-timeout:
			return 0, fmt.Errorf("no event for %s after 30s", name)
		}
	}
}

func (wt *watcher) stop() { wt.w.Stop() }
