package workarounds

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// waitingPlugin is a plugin that, like upstream's informer-reading ones,
// embeds admission.Handler with a ready func; it counts what it is asked
// and, unlike them, does not wait itself, so that a request the gate let
// through too soon fails.
type waitingPlugin struct {
	*admission.Handler
	ready     atomic.Bool
	validated atomic.Int32
}

func newWaitingPlugin() *waitingPlugin {
	p := &waitingPlugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
	p.SetReadyFunc(p.ready.Load)
	return p
}

func (p *waitingPlugin) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	if !p.ready.Load() {
		return errors.New("asked before it was ready")
	}
	p.validated.Add(1)
	return nil
}

func createAttributes() admission.Attributes {
	return admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "default", "cm",
		schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "", admission.Create, nil, false, nil)
}

// The gate holds a request until every plugin that waits for its
// informers is ready, then lets it reach them; a request that ends while
// it waits is refused as upstream's plugins refuse it. Only the order is
// tested here; how much sooner a start is ready with the gate is measured
// by BenchmarkStart (docs/performance.md).
func TestAdmissionReadinessGate(t *testing.T) {
	t.Parallel()
	slow, fast := newWaitingPlugin(), newWaitingPlugin()
	fast.ready.Store(true)
	r := NewAdmissionReadiness()
	decorators := admission.Decorators{r}
	chain := admission.NewChainHandler(decorators.Decorate(slow, "Slow"), decorators.Decorate(fast, "Fast"))
	stop := make(chan struct{})
	defer close(stop)
	gate := r.Gate(chain, stop).(admission.ValidationInterface)

	// A request that ends before the plugins are ready is refused.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := gate.Validate(ctx, createAttributes(), nil); !apierrors.IsForbidden(err) {
		t.Fatalf("a request that ended while the gate was shut: %v, want 403", err)
	}

	done := make(chan error, 1)
	go func() { done <- gate.Validate(context.Background(), createAttributes(), nil) }()
	select {
	case err := <-done:
		t.Fatalf("the gate let a request through before a plugin was ready: %v", err)
	case <-time.After(150 * time.Millisecond):
	}
	if n := slow.validated.Load() + fast.validated.Load(); n != 0 {
		t.Fatalf("the plugins were asked %d times before all were ready", n)
	}
	slow.ready.Store(true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("once the plugins were ready: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gate did not open once the plugins were ready")
	}
	if slow.validated.Load() != 1 || fast.validated.Load() != 1 {
		t.Errorf("validated %d and %d times, want once each", slow.validated.Load(), fast.validated.Load())
	}
}

// A plugin that never becomes ready does not hold the gate shut for ever:
// it opens when the probes give up (upstream's 10 s, a fake's sooner
// here), or when the server stops, and the plugin itself refuses.
func TestAdmissionReadinessGateGivesUp(t *testing.T) {
	t.Parallel()
	r := NewAdmissionReadiness()
	never := neverReady{}
	chain := admission.NewChainHandler(r.Decorate(never, "Never"))
	gate := r.Gate(chain, make(chan struct{})).(admission.ValidationInterface)
	if err := gate.Validate(context.Background(), createAttributes(), nil); !apierrors.IsForbidden(err) {
		t.Errorf("a plugin that is never ready: %v, want its own 403", err)
	}

	stop := make(chan struct{})
	r = NewAdmissionReadiness()
	blocked := blockedPlugin{release: make(chan struct{})}
	defer close(blocked.release)
	gate = r.Gate(admission.NewChainHandler(r.Decorate(blocked, "Blocked")), stop).(admission.ValidationInterface)
	close(stop)
	if err := gate.Validate(context.Background(), createAttributes(), nil); err != nil {
		t.Errorf("after the server stopped: %v", err)
	}
}

// neverReady answers false at once, as WaitForReady does after 10 s.
type neverReady struct{}

func (neverReady) Handles(admission.Operation) bool { return true }
func (neverReady) WaitForReady() bool               { return false }
func (neverReady) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	return admission.NewForbidden(a, errNotReady)
}

// blockedPlugin's WaitForReady returns only when release closes.
type blockedPlugin struct{ release chan struct{} }

func (blockedPlugin) Handles(admission.Operation) bool { return true }
func (p blockedPlugin) WaitForReady() bool             { <-p.release; return false }
func (blockedPlugin) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return nil
}

// The gate looks at a plugin again and again, not once: onceChecker's
// WaitForReady looks once per call and then blocks, so the gate opens
// after it turns ready only because later probes ask again.
func TestAdmissionReadinessProbesAgain(t *testing.T) {
	t.Parallel()
	p := &onceChecker{release: make(chan struct{}), blocked: make(chan struct{})}
	defer close(p.release)
	r := NewAdmissionReadiness()
	stop := make(chan struct{})
	defer close(stop)
	gate := r.Gate(admission.NewChainHandler(r.Decorate(p, "Once")), stop).(admission.ValidationInterface)
	// The first look has found it not ready and blocks: only a later
	// look can open the gate.
	select {
	case <-p.blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("the gate never looked at the plugin")
	}
	p.ready.Store(true)
	done := make(chan error, 1)
	go func() { done <- gate.Validate(context.Background(), createAttributes(), nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the gate did not open after %d looks", p.calls.Load())
	}
	if p.calls.Load() < 2 {
		t.Errorf("the plugin was looked at %d times", p.calls.Load())
	}
}

// onceChecker's WaitForReady looks once, then blocks until release; the
// first call to block closes blocked.
type onceChecker struct {
	ready   atomic.Bool
	calls   atomic.Int32
	release chan struct{}
	blocked chan struct{}
	once    sync.Once
}

func (*onceChecker) Handles(admission.Operation) bool { return true }
func (p *onceChecker) WaitForReady() bool {
	p.calls.Add(1)
	if p.ready.Load() {
		return true
	}
	p.once.Do(func() { close(p.blocked) })
	<-p.release
	return false
}
func (*onceChecker) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return nil
}
