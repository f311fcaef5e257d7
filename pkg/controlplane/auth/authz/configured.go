package authz

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authorizationcel "k8s.io/apiserver/pkg/authorization/cel"
	authorizationmetrics "k8s.io/apiserver/pkg/authorization/metrics"
	"k8s.io/apiserver/pkg/authorization/union"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	configmetrics "k8s.io/apiserver/pkg/server/options/authorizationconfig/metrics"
	"k8s.io/apiserver/plugin/pkg/authorizer/webhook"
	webhookmetrics "k8s.io/apiserver/plugin/pkg/authorizer/webhook/metrics"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/configfile"
)

// Builder makes authorizer chains from an AuthorizationConfiguration:
// members of system:masters first, then Own, then the configured
// authorizers in order, type RBAC meaning Own's authorizer named "RBAC"
// (the RBAC layer's).
type Builder struct {
	// Own are the control plane's own authorizers (its composition's, a
	// library user's); the one named "RBAC" stands where the
	// configuration puts type RBAC, the others follow system:masters.
	Own []Named
	// WebhookRetryBackoff is how webhook calls are retried on errors
	// worth retrying (a reset connection, 429, 5xx); nil means
	// kube-apiserver's default.
	WebhookRetryBackoff *wait.Backoff
}

// rbacName is the name the RBAC layer gives its authorizer.
const rbacName = "RBAC"

// registerMetrics registers the authorization metrics kube-apiserver
// exports, once per process (they live in the process-wide registry).
var registerMetrics = sync.OnceFunc(func() {
	authorizationmetrics.RegisterMetrics()
	webhookmetrics.RegisterWebhookMetrics()
	authorizationcel.RegisterMetrics()
	configmetrics.RegisterMetrics()
})

// Build returns the chain cfg describes and the rule resolvers of its
// authorizers. cfg must have passed Validate.
func (b Builder) Build(cfg *apiserverapi.AuthorizationConfiguration) (authorizer.Authorizer, authorizer.RuleResolver, error) {
	registerMetrics()
	backoff := genericoptions.DefaultAuthWebhookRetryBackoff()
	if b.WebhookRetryBackoff != nil {
		backoff = b.WebhookRetryBackoff
	}
	chain := []union.NamedAuthorizer{{AuthorizerName: user.SystemPrivilegedGroup, Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)}}
	var resolvers []authorizer.RuleResolver
	var rbac *Named
	for i := range b.Own {
		if b.Own[i].Name == rbacName {
			rbac = &b.Own[i]
			continue
		}
		chain = append(chain, union.NamedAuthorizer{AuthorizerName: b.Own[i].Name, Authorizer: b.Own[i].Authorizer})
		if b.Own[i].RuleResolver != nil {
			resolvers = append(resolvers, b.Own[i].RuleResolver)
		}
	}
	if !HasType(cfg, TypeRBAC) {
		// RBAC's cluster-admin binding lists system:masters' rules; without it,
		// this does.
		resolvers = append([]authorizer.RuleResolver{mastersRuleResolver{}}, resolvers...)
	}
	for i, a := range cfg.Authorizers {
		var az authorizer.Authorizer
		var resolver authorizer.RuleResolver
		switch string(a.Type) {
		case TypeRBAC:
			if rbac == nil {
				return nil, nil, field.Invalid(field.NewPath("authorizers").Index(i).Child("type"), a.Type,
					"this control plane has no RBAC (its stack has no rbac layer)")
			}
			az, resolver = rbac.Authorizer, rbac.RuleResolver
		case TypeAlwaysAllow:
			allow := authorizerfactory.NewAlwaysAllowAuthorizer()
			az, resolver = allow, allow
		case TypeAlwaysDeny:
			deny := authorizerfactory.NewAlwaysDenyAuthorizer()
			az, resolver = deny, deny
		case TypeWebhook:
			w, err := newWebhook(a.Name, a.Webhook, *backoff)
			if err != nil {
				return nil, nil, OneLine(field.Invalid(field.NewPath("authorizers").Index(i).Child("webhook"), a.Name, err.Error()))
			}
			az, resolver = w, w.delegate
		default:
			return nil, nil, field.NotSupported(field.NewPath("authorizers").Index(i).Child("type"), a.Type, Types())
		}
		chain = append(chain, union.NamedAuthorizer{AuthorizerName: a.Name, Authorizer: authorizationmetrics.InstrumentedAuthorizer(string(a.Type), a.Name, az)})
		if resolver != nil {
			resolvers = append(resolvers, resolver)
		}
	}
	u, err := union.New(chain...)
	if err != nil {
		return nil, nil, err
	}
	return noServerErrors{u}, union.NewRuleResolvers(resolvers...), nil
}

// webhookMetrics are the metrics kube-apiserver records for its
// authorization webhooks: evaluations, durations and fail-opens per
// webhook, and matchCondition evaluations, not per-status-code requests.
type webhookMetrics struct {
	webhookmetrics.NoopRequestMetrics
	webhookmetrics.WebhookMetrics
	authorizationcel.MatcherMetrics
}

// newWebhook returns k8s.io/apiserver's webhook authorizer for w, whose
// errors become its failurePolicy's decision (failSafe).
func newWebhook(name string, w *apiserverapi.WebhookConfiguration, backoff wait.Backoff) (*failSafe, error) {
	cfg, err := webhookClientConfig(w)
	if err != nil {
		return nil, err
	}
	var onError authorizer.Decision
	switch w.FailurePolicy {
	case apiserverapi.FailurePolicyNoOpinion:
		onError = authorizer.DecisionNoOpinion
	case apiserverapi.FailurePolicyDeny:
		onError = authorizer.DecisionDeny
	default:
		return nil, fmt.Errorf("unknown failurePolicy %q", w.FailurePolicy)
	}
	authorizedTTL, unauthorizedTTL := w.AuthorizedTTL.Duration, w.UnauthorizedTTL.Duration
	if !w.CacheAuthorizedRequests {
		authorizedTTL = 0
	}
	if !w.CacheUnauthorizedRequests {
		unauthorizedTTL = 0
	}
	a, err := webhook.New(cfg, w.SubjectAccessReviewVersion, authorizedTTL, unauthorizedTTL, backoff, onError, w.MatchConditions, name,
		webhookMetrics{WebhookMetrics: webhookmetrics.NewWebhookMetrics(), MatcherMetrics: authorizationcel.NewMatcherMetrics()},
		authorizationcel.NewDefaultCompiler())
	if err != nil {
		return nil, err
	}
	return &failSafe{name: name, policy: w.FailurePolicy, delegate: a}, nil
}

// failSafe turns a webhook's error into its failurePolicy's decision with
// a reason naming the webhook, and logs it.
//
// k8s.io/apiserver's webhook authorizer returns its failurePolicy's
// decision together with the error; WithAuthorization answers 500 to any
// error that comes without an Allow, and the union passes a NoOpinion's
// error on to the end of the chain, so kube-apiserver answers 500 when a
// webhook is down, whatever its failurePolicy. Here, Deny is a 403 whose
// message names the webhook and what went wrong, and NoOpinion lets the
// next authorizer decide. Held by TestWebhookDownIsForbiddenNotInternalError
// and test/e2e TestAuthorizationWebhookFailurePolicy.
type failSafe struct {
	name     string
	policy   string
	delegate *webhook.WebhookAuthorizer
}

// Authorize asks the webhook.
func (f *failSafe) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	decision, reason, err := f.delegate.Authorize(ctx, a)
	if err == nil || decision == authorizer.DecisionAllow {
		return decision, reason, err
	}
	what := "webhook failed"
	var netErr net.Error
	var urlErr *url.Error
	if errors.As(err, &netErr) || errors.As(err, &urlErr) || errors.Is(err, context.DeadlineExceeded) {
		what = "webhook unreachable"
	}
	klog.FromContext(ctx).Error(err, "Authorization webhook failed; applying its failurePolicy", "authorizer", f.name, "failurePolicy", f.policy)
	if decision == authorizer.DecisionNoOpinion {
		// The union prefixes the reasons of NoOpinions with the name.
		return decision, fmt.Sprintf("%s (failurePolicy NoOpinion): %v", what, err), nil
	}
	return decision, fmt.Sprintf("authorizer %q: %s: %v", f.name, what, err), nil
}

// ConditionsAwareAuthorize is Authorize: webhooks give no conditions.
func (f *failSafe) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(f.Authorize(ctx, a))
}

// EvaluateConditions is the webhook's (it has none to evaluate).
func (f *failSafe) EvaluateConditions(ctx context.Context, d authorizer.ConditionsAwareDecision, data authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return f.delegate.EvaluateConditions(ctx, d, data)
}

// noServerErrors makes sure no authorizer error reaches WithAuthorization
// without an Allow, where it would be a 500: the error joins the reason
// of the 403 instead, and is logged. failSafe already answers for
// webhooks; this holds for any other authorizer of the chain (a layer's
// own) and for the union's aggregate of NoOpinion errors.
type noServerErrors struct{ authorizer.Authorizer }

// Authorize asks the chain.
func (n noServerErrors) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	decision, reason, err := n.Authorizer.Authorize(ctx, a)
	if err == nil || decision == authorizer.DecisionAllow {
		return decision, reason, err
	}
	klog.FromContext(ctx).Error(err, "Authorizer failed; the request is forbidden", "decision", decision)
	if reason != "" {
		reason += ": "
	}
	return decision, reason + err.Error(), nil
}

// ConditionsAwareAuthorize is Authorize.
func (n noServerErrors) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(n.Authorize(ctx, a))
}

// Reloadable is a configured chain that a changed configuration replaces
// while requests go on: each request is decided by one chain, the one in
// place when it started.
type Reloadable struct {
	builder     Builder
	apiServerID string
	// required are the types other than Webhook of the configuration at
	// start, which a reloaded one must keep, as kube-apiserver requires.
	required sets.Set[string]
	mu       sync.Mutex // serialises Reload
	current  atomic.Pointer[built]
}

type built struct {
	authorizer authorizer.Authorizer
	resolver   authorizer.RuleResolver
}

// NewReloadable builds the chain of cfg. apiServerID labels the
// configuration metrics.
func NewReloadable(b Builder, cfg *apiserverapi.AuthorizationConfiguration, apiServerID string) (*Reloadable, error) {
	r := &Reloadable{builder: b, apiServerID: apiServerID, required: nonWebhookTypes(cfg)}
	a, resolver, err := b.Build(cfg)
	if err != nil {
		return nil, err
	}
	r.current.Store(&built{authorizer: a, resolver: resolver})
	return r, nil
}

// Authorize asks the chain in place.
func (r *Reloadable) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return r.current.Load().authorizer.Authorize(ctx, a)
}

// ConditionsAwareAuthorize asks the chain in place.
func (r *Reloadable) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return r.current.Load().authorizer.ConditionsAwareAuthorize(ctx, a)
}

// EvaluateConditions asks the chain in place.
func (r *Reloadable) EvaluateConditions(ctx context.Context, d authorizer.ConditionsAwareDecision, data authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return r.current.Load().authorizer.EvaluateConditions(ctx, d, data)
}

// RulesFor lists the rules of the chain in place.
func (r *Reloadable) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return r.current.Load().resolver.RulesFor(ctx, u, namespace)
}

// Reload replaces the chain with the one data describes. A configuration
// that does not load, validate or build, or drops a type other than
// Webhook that the first one had, is refused: the chain in place stays,
// and apiserver_authorization_config_controller_automatic_reloads_total
// counts a failure.
func (r *Reloadable) Reload(data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.reload(data)
	if err != nil {
		configmetrics.RecordAuthorizationConfigAutomaticReloadFailure(r.apiServerID)
		return err
	}
	configmetrics.RecordAuthorizationConfigAutomaticReloadSuccess(r.apiServerID, string(data))
	return nil
}

func (r *Reloadable) reload(data []byte) error {
	cfg, err := LoadData(data)
	if err != nil {
		return err
	}
	if missing := r.required.Difference(nonWebhookTypes(cfg)); missing.Len() > 0 {
		return fmt.Errorf("authorizers: missing required types %v: types other than Webhook cannot be removed without a restart", sets.List(missing))
	}
	a, resolver, err := r.builder.Build(cfg)
	if err != nil {
		return err
	}
	r.current.Store(&built{authorizer: a, resolver: resolver})
	return nil
}

// Watch reloads path whenever it changes until ctx is done (configfile
// says how it watches); initial is the content the chain was built
// from. A refused content is logged and counted; the chain in place stays.
func (r *Reloadable) Watch(ctx context.Context, path string, initial []byte) {
	registerMetrics()
	configmetrics.RecordAuthorizationConfigLastConfigInfo(r.apiServerID, string(initial))
	configfile.Watch(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("config", "authorization")), path, initial, configfile.DefaultInterval, r.Reload,
		func(error) { configmetrics.RecordAuthorizationConfigAutomaticReloadFailure(r.apiServerID) })
}
