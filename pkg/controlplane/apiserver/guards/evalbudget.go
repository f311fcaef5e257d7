package guards

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
)

// EvaluationBudget is how long a write may spend evaluating CEL: a custom
// resource's validation rules, and each admission policy plugin's
// expressions. CEL's cost limits count steps, but cel-go's cost tracker
// spends time that grows with the square of a list's length (a rule over
// 80,000 items held a core for 8.7 s while charged a linear cost), so
// gcp bounds the time itself, through the context that CEL checks every
// hundred iterations. A request past it gets 422 instead of the CPU.
const EvaluationBudget = time.Second

// errBudgetSpent is why a write's context is cancelled when its custom
// resource's validation ran past the budget.
var errBudgetSpent = errors.New("custom resource validation ran past its evaluation budget")

// evalBudgetKey finds a request's evalBudget in its context.
type evalBudgetKey struct{}

// evalBudget times the span of a write in which a custom resource is
// validated: from the end of mutating admission to the start of validating
// admission, where the registry runs the CRD's schema and CEL rules with the
// request's own context. Past the limit it cancels that context, which
// interrupts CEL; the request's finisher then answers 504, which
// WithEvalBudget turns into the 422 the client should get.
type evalBudget struct {
	limit  time.Duration
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	timer *time.Timer
	spent string // what ran past the budget, once it has
}

// arm starts timing what is validated next.
func (b *evalBudget) arm(what string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent != "" {
		return
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timer = time.AfterFunc(b.limit, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.timer == nil {
			return // disarmed as it fired
		}
		b.spent = what
		b.cancel(errBudgetSpent)
	})
}

// disarm stops timing.
func (b *evalBudget) disarm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}

// spentOn says what ran past the budget, or "".
func (b *evalBudget) spentOn() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// budgetFrom returns the request's evalBudget, or nil.
func budgetFrom(ctx context.Context) *evalBudget {
	b, _ := ctx.Value(evalBudgetKey{}).(*evalBudget)
	return b
}

// WithEvalBudget gives each write an evalBudget (armed by guardedAdmission
// for custom resources), and answers 422 when it is spent, whatever the
// handler then writes.
func WithEvalBudget(next http.Handler, codecs serializer.CodecFactory, limit time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !carriesObject(r.Method) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancelCause(r.Context())
		b := &evalBudget{limit: limit, cancel: cancel}
		defer func() {
			b.disarm()
			cancel(nil)
		}()
		bw := &budgetWriter{ResponseWriter: w, budget: b, codecs: codecs, request: r}
		next.ServeHTTP(responsewriter.WrapForHTTP1Or2(bw), r.WithContext(context.WithValue(ctx, evalBudgetKey{}, b)))
	})
}

// budgetWriter replaces the response of a request whose evaluation budget
// was spent with a 422 naming what ran too long.
type budgetWriter struct {
	http.ResponseWriter
	budget   *evalBudget
	codecs   serializer.CodecFactory
	request  *http.Request
	started  bool
	replaced bool
}

func (w *budgetWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *budgetWriter) WriteHeader(code int) {
	if w.start() {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *budgetWriter) Write(p []byte) (int, error) {
	if !w.start() {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// start begins the response, and says whether the handler's is the one
// written; once the budget is spent ours is.
func (w *budgetWriter) start() bool {
	if w.started {
		return !w.replaced
	}
	w.started = true
	what := w.budget.spentOn()
	if what == "" {
		return true
	}
	w.replaced = true
	status := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: fmt.Sprintf("validating %s ran past gcp's evaluation budget of %s (its CEL rules cost more "+
			"than that for an object this large); make the object smaller or the rules cheaper", what, w.budget.limit),
	}}
	responsewriters.ErrorNegotiated(status, w.codecs, schema.GroupVersion{Version: "v1"}, w.ResponseWriter, w.request)
	return false
}

// WithPolicyBudget is an admission decorator that gives the admission
// policy plugins, whose CEL runs with the context it is handed, at most
// limit per call. An expression interrupted by it fails as any expression
// that errs does: the policy's failurePolicy decides, and Fail (the default)
// denies the request with a message naming the policy and the expression.
func WithPolicyBudget(limit time.Duration) admission.Decorator {
	return admission.DecoratorFunc(func(handler admission.Interface, name string) admission.Interface {
		if name != validatingadmissionpolicy.PluginName && name != mutatingadmissionpolicy.PluginName {
			return handler
		}
		return budgetedPlugin{plugin: handler, limit: limit}
	})
}

// budgetedPlugin is an admission plugin whose calls get at most limit.
type budgetedPlugin struct {
	plugin admission.Interface
	limit  time.Duration
}

// Handles implements admission.Interface.
func (p budgetedPlugin) Handles(op admission.Operation) bool { return p.plugin.Handles(op) }

// Admit implements admission.MutationInterface.
func (p budgetedPlugin) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	m, ok := p.plugin.(admission.MutationInterface)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.limit)
	defer cancel()
	return m.Admit(ctx, a, o)
}

// Validate implements admission.ValidationInterface.
func (p budgetedPlugin) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	v, ok := p.plugin.(admission.ValidationInterface)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.limit)
	defer cancel()
	return v.Validate(ctx, a, o)
}
