package admission

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

// Upstream's ValidatingAdmissionPolicy and MutatingAdmissionPolicy plugins
// start their policy source when they are initialized
// (ValidateInitialization, while the server's configuration is built), and
// the source then looks whether its informers have synced every 100 ms
// (client-go's WaitForCacheSync, k8s.io/apiserver's
// admission/plugin/policy/generic/policy_source.go). The informers sync only
// once the server serves, 100–200 ms later, so the plugins were ready up to
// 100 ms after their informers, and every write waited for them
// (docs/performance.md, "Where a start's wall time goes now").
//
// gcp registers the same plugins, initialized once their informers have
// synced: the source's first look finds them synced and it is ready at
// once. Until then a request that the plugin evaluates waits, as it would
// wait for upstream's source, up to upstream's 10 s; the resources upstream
// never holds (the policies and bindings themselves, the access and token
// reviews) pass as they do upstream. A plugin given a static manifests dir,
// or turned off by its feature gate, is initialized at once as upstream's
// (a bad dir still fails the start).
//
// Held in TestPolicyPluginsWaitForInformers; remove it if the policy source
// waits for its informers without polling.

// initTimeout is how long a request waits for a plugin's initialization:
// upstream's timeToWaitForReady.
const initTimeout = 10 * time.Second

// policyConfigResources are the resources upstream's API policies never
// evaluate (generic.admissionResources).
var policyConfigResources = []schema.GroupResource{
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"},
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"},
}

// syncedInit runs a plugin's initialization once the informers it reads
// have synced.
type syncedInit struct {
	factory informers.SharedInformerFactory
	stop    <-chan struct{}
	off     bool

	mu     sync.Mutex
	exempt sets.Set[schema.GroupResource]

	done chan struct{}
	err  error // set before done closes
}

func newSyncedInit() *syncedInit {
	return &syncedInit{exempt: sets.New(policyConfigResources...), done: make(chan struct{})}
}

func (s *syncedInit) exclude(resources []schema.GroupResource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exempt.Insert(resources...)
}

// start runs validate now if the plugin is not to wait (no informer factory
// or stop channel, which validate reports; a static manifests dir, whose
// errors fail the start; a plugin turned off), and otherwise once every
// informer that informersOf registers has synced.
func (s *syncedInit) start(staticDir string, informersOf func(informers.SharedInformerFactory) []cache.SharedIndexInformer, validate func() error) error {
	if s.factory == nil || s.stop == nil || staticDir != "" || s.off {
		s.err = validate()
		close(s.done)
		return s.err
	}
	var synced []cache.DoneChecker
	for _, informer := range informersOf(s.factory) {
		synced = append(synced, informer.HasSyncedChecker())
	}
	go func() {
		defer close(s.done)
		if !cache.WaitFor(wait.ContextForChannel(s.stop), "", synced...) {
			s.err = errors.New("the server stopped before the policy informers synced")
			return
		}
		if s.err = validate(); s.err != nil {
			klog.ErrorS(s.err, "Admission policy plugin failed to initialize; it refuses the requests it would evaluate")
			return
		}
		// Informers the plugin registered beyond informersOf's start
		// now rather than never.
		s.factory.Start(s.stop)
	}()
	return nil
}

// wait returns nil once the plugin is initialized, or at once for a
// resource upstream's plugin does not hold; it refuses a otherwise.
func (s *syncedInit) wait(ctx context.Context, a admission.Attributes) error {
	select {
	case <-s.done:
		return s.refusal(a)
	default:
	}
	s.mu.Lock()
	exempt := s.exempt.Has(a.GetResource().GroupResource())
	s.mu.Unlock()
	if exempt {
		return nil
	}
	timer := time.NewTimer(initTimeout)
	defer timer.Stop()
	select {
	case <-s.done:
		return s.refusal(a)
	case <-ctx.Done():
	case <-timer.C:
	}
	return admission.NewForbidden(a, errors.New("not yet ready to handle request"))
}

// refusal is the error for a once initialization has ended: nil if it
// succeeded.
func (s *syncedInit) refusal(a admission.Attributes) error {
	if s.err == nil {
		return nil
	}
	return admission.NewForbidden(a, fmt.Errorf("not ready to handle request: %w", s.err))
}

// waitForReady is the plugin's WaitForReady: false until it is
// initialized, then its own answer.
func (s *syncedInit) waitForReady(ready func() bool) bool {
	timer := time.NewTimer(initTimeout)
	defer timer.Stop()
	select {
	case <-s.done:
	case <-timer.C:
		return false
	}
	return s.err == nil && ready()
}

// syncedValidatingPolicy is upstream's ValidatingAdmissionPolicy plugin,
// initialized once its informers have synced.
type syncedValidatingPolicy struct {
	*validatingadmissionpolicy.Plugin
	init *syncedInit
}

func registerValidatingPolicy(plugins *admission.Plugins) {
	plugins.Register(validatingadmissionpolicy.PluginName, func(config io.Reader) (admission.Interface, error) {
		p, err := validatingadmissionpolicy.NewPlugin(config)
		if err != nil {
			return nil, err
		}
		return &syncedValidatingPolicy{Plugin: p, init: newSyncedInit()}, nil
	})
}

// SetExternalKubeInformerFactory implements initializer.WantsExternalKubeInformerFactory.
func (p *syncedValidatingPolicy) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	p.init.factory = f
	p.Plugin.SetExternalKubeInformerFactory(f)
}

// SetDrainedNotification implements initializer.WantsDrainedNotification.
func (p *syncedValidatingPolicy) SetDrainedNotification(stop <-chan struct{}) {
	p.init.stop = stop
	p.Plugin.SetDrainedNotification(stop)
}

// SetExcludedAdmissionResources implements initializer.WantsExcludedAdmissionResources.
func (p *syncedValidatingPolicy) SetExcludedAdmissionResources(resources []schema.GroupResource) {
	p.init.exclude(resources)
	p.Plugin.SetExcludedAdmissionResources(resources)
}

// ValidateInitialization implements admission.InitializationValidator: see
// syncedInit.start.
func (p *syncedValidatingPolicy) ValidateInitialization() error {
	return p.init.start(p.GetStaticManifestsDir(), func(f informers.SharedInformerFactory) []cache.SharedIndexInformer {
		return []cache.SharedIndexInformer{
			f.Core().V1().Namespaces().Informer(),
			f.Admissionregistration().V1().ValidatingAdmissionPolicies().Informer(),
			f.Admissionregistration().V1().ValidatingAdmissionPolicyBindings().Informer(),
		}
	}, p.Plugin.ValidateInitialization)
}

// WaitForReady is admission.Handler's, once the plugin is initialized.
func (p *syncedValidatingPolicy) WaitForReady() bool {
	return p.init.waitForReady(p.Plugin.WaitForReady)
}

// Validate implements admission.ValidationInterface.
func (p *syncedValidatingPolicy) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if err := p.init.wait(ctx, a); err != nil {
		return err
	}
	return p.Plugin.Validate(ctx, a, o)
}

// syncedMutatingPolicy is upstream's MutatingAdmissionPolicy plugin,
// initialized once its informers have synced.
type syncedMutatingPolicy struct {
	*mutatingadmissionpolicy.Plugin
	init *syncedInit
}

func registerMutatingPolicy(plugins *admission.Plugins) {
	plugins.Register(mutatingadmissionpolicy.PluginName, func(config io.Reader) (admission.Interface, error) {
		p, err := mutatingadmissionpolicy.NewPlugin(config)
		if err != nil {
			return nil, err
		}
		return &syncedMutatingPolicy{Plugin: p, init: newSyncedInit()}, nil
	})
}

// InspectFeatureGates implements initializer.WantsFeatures: the plugin is
// on with its feature gate, as upstream's.
func (p *syncedMutatingPolicy) InspectFeatureGates(gates featuregate.FeatureGate) {
	p.init.off = !gates.Enabled(features.MutatingAdmissionPolicy)
	p.Plugin.InspectFeatureGates(gates)
}

// SetExternalKubeInformerFactory implements initializer.WantsExternalKubeInformerFactory.
func (p *syncedMutatingPolicy) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	p.init.factory = f
	p.Plugin.SetExternalKubeInformerFactory(f)
}

// SetDrainedNotification implements initializer.WantsDrainedNotification.
func (p *syncedMutatingPolicy) SetDrainedNotification(stop <-chan struct{}) {
	p.init.stop = stop
	p.Plugin.SetDrainedNotification(stop)
}

// SetExcludedAdmissionResources implements initializer.WantsExcludedAdmissionResources.
func (p *syncedMutatingPolicy) SetExcludedAdmissionResources(resources []schema.GroupResource) {
	p.init.exclude(resources)
	p.Plugin.SetExcludedAdmissionResources(resources)
}

// ValidateInitialization implements admission.InitializationValidator: see
// syncedInit.start.
func (p *syncedMutatingPolicy) ValidateInitialization() error {
	return p.init.start(p.GetStaticManifestsDir(), func(f informers.SharedInformerFactory) []cache.SharedIndexInformer {
		return []cache.SharedIndexInformer{
			f.Core().V1().Namespaces().Informer(),
			f.Admissionregistration().V1().MutatingAdmissionPolicies().Informer(),
			f.Admissionregistration().V1().MutatingAdmissionPolicyBindings().Informer(),
		}
	}, p.Plugin.ValidateInitialization)
}

// WaitForReady is admission.Handler's, once the plugin is initialized.
func (p *syncedMutatingPolicy) WaitForReady() bool {
	return p.init.waitForReady(p.Plugin.WaitForReady)
}

// Admit implements admission.MutationInterface.
func (p *syncedMutatingPolicy) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if err := p.init.wait(ctx, a); err != nil {
		return err
	}
	return p.Plugin.Admit(ctx, a, o)
}
