package logging

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// QuietVerbosity is the verbosity from which the messages Quiet holds back
// are written (at that verbosity, so JSON records say "v":2).
const QuietVerbosity = 2

// noisy are the starts of informational messages that k8s.io libraries
// (and gcp's own controllers) write at verbosity 0 while a control plane
// starts, about a hundred lines on every start that say nothing a user
// acts on. They are written from -v=2 on.
//
// gcp filters them here rather than patching upstream: the messages are
// upstream's, at upstream's levels, and kube-apiserver writes them too; a
// list in one place is cheaper to keep than forks of a dozen packages, and
// the e2e test TestDefaultStartIsShort fails, naming the line, when a
// library bump adds a new one.
var noisy = []string{
	"Waiting for caches to sync",
	"Caches are synced",
	"Adding GroupVersion ",
	"Skipping API ",
	"Serving securely on ",
	"Starting ",
	"Running API Priority and Fairness",
	"refreshing policies",
	"quota admission added evaluator for",
	"Reconciled the bootstrap RBAC policy",
	"Shutting down ",
	"Stopping ",
	"Stopped listening on ",
	"quota evaluator worker shutdown",
	"StorageObjectCountTracker pruner is exiting",
}

// noisyError is an error message upstream writes on a first start and
// that resolves itself: the lease controller runs before gcp's bootstrap
// hook has made kube-system, and retries 200 ms later.
const noisyError = "Failed to ensure lease exists, will retry"

// noisyForbidden is what gcp start's controllers say once when they ask
// for /healthz before the bootstrap RBAC policy lets them (403). Any other
// answer (etcd or the API server down) is worth saying; a 403 that lasts
// ends in the controllers' own error after their start-up wait.
const noisyForbidden = "Waiting for the API server to be healthy"

// isNoisy says whether msg (a message and its key/value pairs as klog
// writes them, or a klog text line's message) is one Quiet holds back
// below QuietVerbosity.
func isNoisy(msg string) bool {
	msg = strings.TrimPrefix(msg, `"`)
	if strings.HasPrefix(msg, noisyForbidden) {
		return strings.Contains(msg, " status=403 ")
	}
	if strings.HasPrefix(msg, noisyError) {
		return strings.Contains(msg, `namespaces \"kube-system\" not found`) || strings.Contains(msg, `namespaces "kube-system" not found`)
	}
	if strings.HasPrefix(msg, "Loaded ") && strings.Contains(msg, " admission controller(s) successfully") {
		return true
	}
	for _, p := range noisy {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// installQuiet wraps klog's logger (set by logsapi.ValidateAndApply) in
// Quiet. Text lines that klog formats itself (klog.Infof and friends) pass
// through the same test. The JSON and text loggers component-base makes
// write unbuffered to standard error, so no flush function is lost.
func installQuiet() {
	inner := klog.Background()
	opts := []klog.LoggerOption{klog.ContextualLogger(true)}
	if w, ok := inner.GetSink().(textlogger.KlogBufferWriter); ok {
		opts = append(opts, klog.WriteKlogBuffer(func(line []byte) {
			if !verbose(inner) && isNoisy(klogLineMessage(line)) {
				return
			}
			w.WriteKlogBuffer(line)
		}))
	}
	klog.SetLoggerWithOptions(Quiet(inner), opts...)
}

// verbose says whether l writes at QuietVerbosity.
func verbose(l logr.Logger) bool { return l.GetSink().Enabled(QuietVerbosity) }

// klogLineMessage is the message of a klog text line: what follows "] ".
func klogLineMessage(line []byte) string {
	if i := bytes.Index(line, []byte("] ")); i >= 0 {
		return string(line[i+2:])
	}
	return string(line)
}

// Quiet returns l, except that the known start-up chatter (see noisy),
// written at verbosities below QuietVerbosity, is written at
// QuietVerbosity: only from -v=2 on.
func Quiet(l logr.Logger) logr.Logger {
	sink := l.GetSink()
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // quietSink's own frame
	}
	return logr.New(quietSink{sink: sink})
}

// quietSink is Quiet's logr.LogSink.
type quietSink struct{ sink logr.LogSink }

// Init does nothing: the wrapped sink was initialised by its own logger,
// and a second Init would reset (textlogger) or add to (zapr) its call
// depth.
func (q quietSink) Init(logr.RuntimeInfo) {}

func (q quietSink) Enabled(level int) bool { return q.sink.Enabled(level) }

func (q quietSink) Info(level int, msg string, kv ...any) {
	if level < QuietVerbosity && isNoisy(withStatus(msg, kv)) {
		if !q.sink.Enabled(QuietVerbosity) {
			return
		}
		level = QuietVerbosity
	}
	q.sink.Info(level, msg, kv...)
}

func (q quietSink) Error(err error, msg string, kv ...any) {
	if err != nil && strings.HasPrefix(msg, noisyError) && isNoisy(msg+" "+err.Error()) && !q.sink.Enabled(QuietVerbosity) {
		return
	}
	q.sink.Error(err, msg, kv...)
}

// withStatus is msg followed by " status=N " when kv has a "status".
func withStatus(msg string, kv []any) string {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "status" {
			return fmt.Sprintf("%s status=%v ", msg, kv[i+1])
		}
	}
	return msg
}

func (q quietSink) WithValues(kv ...any) logr.LogSink {
	return quietSink{sink: q.sink.WithValues(kv...)}
}

func (q quietSink) WithName(name string) logr.LogSink {
	return quietSink{sink: q.sink.WithName(name)}
}

// WithCallDepth keeps callers' file and line right through the wrapper.
func (q quietSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := q.sink.(logr.CallDepthLogSink); ok {
		return quietSink{sink: cd.WithCallDepth(depth)}
	}
	return q
}
