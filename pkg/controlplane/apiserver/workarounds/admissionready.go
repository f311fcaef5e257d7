package workarounds

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/klog/v2"
)

// Admission plugins that read informers (NamespaceLifecycle, the webhook
// and policy plugins, ResourceQuota) embed admission.Handler and refuse to
// admit until those have synced: a request that finds one not ready waits
// in Handler.WaitForReady, which looks again only every 100 ms
// (k8s.io/apiserver/pkg/admission/handler.go; there is no non-blocking
// check and no readiness signal). The post-start hooks' first writes, sent
// a few milliseconds after serving begins, all found the plugins not ready
// and waited 100 or 200 ms each, so a server was ready that much later
// than its plugins (docs/performance.md, "Where a start's wall time goes
// now").
//
// AdmissionReadiness is the workaround: it probes each plugin with
// WaitForReady, probes started probeStagger apart so that between them
// they look every probeStagger, and holds the chain's requests (gate)
// until every plugin has answered. A request then reaches the plugins
// within a few milliseconds of their readiness, and their own
// WaitForReady answers at once. Nothing is admitted that the plugins would
// not admit: the gate only waits, and the plugins still decide. It holds
// every request of the chain, not only those of the plugin not yet ready:
// a plugin that never becomes ready (its API not served, say) holds every
// write for up to 10 s after a start; then the gate opens and that plugin
// refuses what it handles, as upstream's does.
//
// Held in TestAdmissionReadinessGate; remove it if k8s.io/apiserver gives
// admission.Handler a readiness channel.
type AdmissionReadiness struct {
	mu      sync.Mutex
	plugins map[string]readyWaiter
	ready   chan struct{}
}

// readyWaiter is what admission.Handler, embedded by a plugin that waits
// for its informers, implements: it blocks until the plugin is ready, or
// says false after upstream's 10 s.
type readyWaiter interface {
	WaitForReady() bool
}

const (
	// probesPerPlugin WaitForReady calls, started probeStagger apart, look
	// at a plugin every probeStagger between them.
	probesPerPlugin = 10
	probeStagger    = 10 * time.Millisecond
)

// NewAdmissionReadiness returns a readiness gate with no plugins yet: it is
// to be the first admission decorator, then Gate wraps the chain.
func NewAdmissionReadiness() *AdmissionReadiness {
	return &AdmissionReadiness{plugins: map[string]readyWaiter{}, ready: make(chan struct{})}
}

// Decorate implements admission.Decorator: it keeps each plugin that can
// be waited for, and returns it unchanged. It must be the first decorator,
// the one handed the plugins themselves.
func (r *AdmissionReadiness) Decorate(plugin admission.Interface, name string) admission.Interface {
	if w, ok := plugin.(readyWaiter); ok {
		r.mu.Lock()
		r.plugins[name] = w
		r.mu.Unlock()
	}
	return plugin
}

// Gate starts probing the plugins Decorate kept and returns chain behind a
// gate that opens once each has answered (ready, or not after upstream's
// 10 s), or when stop closes.
func (r *AdmissionReadiness) Gate(chain admission.Interface, stop <-chan struct{}) admission.Interface {
	r.mu.Lock()
	plugins := r.plugins
	r.plugins = nil
	r.mu.Unlock()
	var wg sync.WaitGroup
	for name, p := range plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if probe(p, stop) {
				return
			}
			select {
			case <-stop:
			default:
				klog.InfoS("Admission plugin not ready; its requests are refused until it is", "plugin", name)
			}
		}()
	}
	go func() {
		wg.Wait()
		close(r.ready)
	}()
	return readyGate{chain: chain, ready: r.ready}
}

// probe says whether p became ready: it calls p.WaitForReady up to
// probesPerPlugin times, probeStagger apart, and returns at the first
// true, when all have said false, or when stop closes. The calls still
// waiting return by themselves at their next look.
func probe(p readyWaiter, stop <-chan struct{}) bool {
	answers := make(chan bool, probesPerPlugin)
	tick := time.NewTicker(probeStagger)
	defer tick.Stop()
	launched, answered := 0, 0
	for {
		if launched < probesPerPlugin {
			launched++
			go func() { answers <- p.WaitForReady() }()
		}
		select {
		case ok := <-answers:
			if ok {
				return true
			}
			if answered++; answered == probesPerPlugin {
				return false
			}
		case <-tick.C:
		case <-stop:
			return false
		}
	}
}

// errNotReady is what upstream's plugins say while not ready.
var errNotReady = errors.New("not yet ready to handle request")

// readyGate holds each request of chain until ready closes.
type readyGate struct {
	chain admission.Interface
	ready <-chan struct{}
}

// Handles implements admission.Interface.
func (g readyGate) Handles(op admission.Operation) bool { return g.chain.Handles(op) }

// Admit implements admission.MutationInterface.
func (g readyGate) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	m, ok := g.chain.(admission.MutationInterface)
	if !ok {
		return nil
	}
	if err := g.wait(ctx, a); err != nil {
		return err
	}
	return m.Admit(ctx, a, o)
}

// Validate implements admission.ValidationInterface.
func (g readyGate) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	v, ok := g.chain.(admission.ValidationInterface)
	if !ok {
		return nil
	}
	if err := g.wait(ctx, a); err != nil {
		return err
	}
	return v.Validate(ctx, a, o)
}

// wait returns when the gate is open, or refuses a as upstream's plugins
// do if the request ends first.
func (g readyGate) wait(ctx context.Context, a admission.Attributes) error {
	select {
	case <-g.ready:
		return nil
	default:
	}
	select {
	case <-g.ready:
		return nil
	case <-ctx.Done():
		return admission.NewForbidden(a, errNotReady)
	}
}
