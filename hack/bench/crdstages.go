package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientv1 "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// crdStages records where the time from a CRD's create to discovery
// goes: when each create was sent, and when a watch first saw the CRD's
// NamesAccepted and Established conditions true. apiextensions-apiserver
// names CRDs one at a time, so that stage is the one to watch.
type crdStages struct {
	client                   apiextensionsclientv1.CustomResourceDefinitionInterface
	mu                       sync.Mutex
	w                        watch.Interface // nil once stop has begun
	sent, named, established map[string]time.Time
	done                     chan struct{}
}

func watchCRDStages(client apiextensionsclientv1.CustomResourceDefinitionInterface) (*crdStages, error) {
	w, err := client.Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	s := &crdStages{client: client, w: w, sent: map[string]time.Time{}, named: map[string]time.Time{}, established: map[string]time.Time{}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for w != nil {
			for ev := range w.ResultChan() {
				if crd, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition); ok {
					s.see(crd, time.Now())
				}
			}
			w = s.rewatch()
		}
	}()
	return s, nil
}

// see notes when crd's conditions were first seen true.
func (s *crdStages) see(crd *apiextensionsv1.CustomResourceDefinition, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range crd.Status.Conditions {
		if c.Status != apiextensionsv1.ConditionTrue {
			continue
		}
		switch c.Type {
		case apiextensionsv1.NamesAccepted:
			if _, seen := s.named[crd.Name]; !seen {
				s.named[crd.Name] = now
			}
		case apiextensionsv1.Established:
			if _, seen := s.established[crd.Name]; !seen {
				s.established[crd.Name] = now
			}
		}
	}
}

// rewatch follows a watch the server ended (kube-apiserver ends one whose
// client reads too slowly, and every watch after its timeout): it lists
// the CRDs, noting what the list shows as seen now (later than it
// happened, never earlier), and watches again from the list. It returns
// nil once stop has begun.
func (s *crdStages) rewatch() watch.Interface {
	for {
		s.mu.Lock()
		stopped := s.w == nil
		s.mu.Unlock()
		if stopped {
			return nil
		}
		log("the CRD watch ended; listing the CRDs and watching again")
		list, err := s.client.List(context.Background(), metav1.ListOptions{})
		if err == nil {
			now := time.Now()
			for i := range list.Items {
				s.see(&list.Items[i], now)
			}
			var w watch.Interface
			if w, err = s.client.Watch(context.Background(), metav1.ListOptions{ResourceVersion: list.ResourceVersion}); err == nil {
				s.mu.Lock()
				defer s.mu.Unlock()
				if s.w == nil {
					w.Stop()
					return nil
				}
				s.w = w
				return w
			}
		}
		log("watching the CRDs again: %v", err)
		time.Sleep(time.Second)
	}
}

// creating notes that the create of the CRD name is being sent.
func (s *crdStages) creating(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent[name] = time.Now()
}

// stop stops the watch and says, for the CRDs sent, how long after its
// create each was named and established (median and slowest), and when
// the last create was sent and the last CRD named and established,
// counted from t0.
func (s *crdStages) stop(t0 time.Time) string {
	s.mu.Lock()
	w := s.w
	s.w = nil
	s.mu.Unlock()
	w.Stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	var lastSent time.Time
	for _, sent := range s.sent {
		if sent.After(lastSent) {
			lastSent = sent
		}
	}
	after := func(stage map[string]time.Time) string {
		var ds []time.Duration
		var last time.Time
		for name, sent := range s.sent {
			if t, ok := stage[name]; ok {
				ds = append(ds, t.Sub(sent))
				if t.After(last) {
					last = t
				}
			}
		}
		if len(ds) == 0 {
			return "never seen"
		}
		slices.Sort(ds)
		return fmt.Sprintf("p50 %v after its create, the last at %v (%d seen)", ms(ds[len(ds)/2]), ms(last.Sub(t0)), len(ds))
	}
	return fmt.Sprintf("last create sent at %v; names accepted %s; established %s", ms(lastSent.Sub(t0)), after(s.named), after(s.established))
}

// lastEstablished says whether the watch has seen every CRD of names
// established, and when it saw the last of them.
func (s *crdStages) lastEstablished(names []string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last time.Time
	for _, name := range names {
		t, ok := s.established[name]
		if !ok {
			return time.Time{}, false
		}
		if t.After(last) {
			last = t
		}
	}
	return last, true
}
