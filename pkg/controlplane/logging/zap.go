package logging

import (
	"runtime"
	"strings"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
)

// Etcd's zap levels as klog verbosities. etcd's errors are klog errors,
// its warnings are written at the default verbosity, its info lines (about
// forty on every start: raft's election, listeners, the cluster version)
// from -v=2, and its debug lines from -v=4.
const (
	EtcdWarnVerbosity  = 0
	EtcdInfoVerbosity  = 2
	EtcdDebugVerbosity = 4
)

// etcdVerbosity is the klog verbosity of an etcd entry at level l below
// error.
func etcdVerbosity(l zapcore.Level) int {
	switch {
	case l >= zapcore.WarnLevel:
		return EtcdWarnVerbosity
	case l >= zapcore.InfoLevel:
		return EtcdInfoVerbosity
	default:
		return EtcdDebugVerbosity
	}
}

// etcdDropped says whether an etcd entry is dropped at the core, whatever
// the verbosity. On a new member's first start etcd's storage version
// monitor asks for the schema version before the first raft entry has
// given the backend a term, and writes an error with a stack trace
// ("failed to update storage version", "cannot detect storage schema
// version: missing term information"), after a warning ("Failed to detect
// schema version"); the next tick of the monitor succeeds. etcd's own
// tests met the same (etcd-io/etcd#18978, the confstate variant in #20495).
// Nothing is wrong and nothing is for the user to do, so neither is
// written.
func etcdDropped(ent zapcore.Entry, fields []zapcore.Field) bool {
	switch ent.Message {
	case "failed to update storage version", "Failed to detect schema version":
		for _, f := range fields {
			if err, ok := f.Interface.(error); ok && f.Type == zapcore.ErrorType && strings.Contains(err.Error(), "missing term information") {
				return true
			}
		}
	}
	return false
}

// etcdDemoted are etcd warnings written at EtcdInfoVerbosity: a read or
// write slower than 100 ms, which a loaded or slow disk makes common while
// the API server bootstraps. The API server's own traces name slow
// requests; etcd's per-request line is detail.
func etcdDemoted(msg string) bool {
	return msg == "apply request took too long"
}

// ZapCore returns a zap core that writes etcd's log through l (klog's
// logger, so in the process's format and at its verbosity): an entry at
// error level or above is l.Error (the "error" field, if any, its error),
// one below is l.V(n).Info with n from EtcdWarnVerbosity,
// EtcdInfoVerbosity and EtcdDebugVerbosity, fields are key/value pairs
// ("error" fields under klog's "err"), and no stack traces are written.
// min is a further floor: entries below it are never written.
func ZapCore(l logr.Logger, min zapcore.Level) zapcore.Core {
	return &zapCore{l: l, min: min}
}

// zapCore is ZapCore's zapcore.Core.
type zapCore struct {
	l   logr.Logger
	min zapcore.Level
	kv  []any
}

func (c *zapCore) Enabled(l zapcore.Level) bool {
	if l < c.min {
		return false
	}
	if l >= zapcore.ErrorLevel {
		return true
	}
	return c.l.V(etcdVerbosity(l)).Enabled()
}

func (c *zapCore) With(fields []zapcore.Field) zapcore.Core {
	kv := append(append([]any(nil), c.kv...), keysAndValues(fields)...)
	return &zapCore{l: c.l, min: c.min, kv: kv}
}

func (c *zapCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *zapCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	if etcdDropped(ent, fields) {
		return nil
	}
	kv := append(append([]any(nil), c.kv...), keysAndValues(fields)...)
	l := c.l.WithCallDepth(1 + zapFrames())
	if ent.Level >= zapcore.ErrorLevel {
		var err error
		for i := 0; i+1 < len(kv); i += 2 {
			if e, ok := kv[i+1].(error); ok && kv[i] == "err" {
				err = e
				kv = append(kv[:i:i], kv[i+2:]...)
				break
			}
		}
		l.Error(err, ent.Message, kv...)
		return nil
	}
	v := etcdVerbosity(ent.Level)
	if etcdDemoted(ent.Message) {
		v = EtcdInfoVerbosity
	}
	if l := l.V(v); l.Enabled() {
		l.Info(ent.Message, kv...)
	}
	return nil
}

func (c *zapCore) Sync() error { return nil }

// zapFrames counts the zap frames between Write and etcd's call site
// (two for a zap.Logger method, three for a SugaredLogger's), so that the
// line names etcd's file and line, not zap's.
func zapFrames() int {
	var pcs [16]uintptr
	n := runtime.Callers(3, pcs[:]) // runtime.Callers, zapFrames, Write
	frames := runtime.CallersFrames(pcs[:n])
	d := 0
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "go.uber.org/zap") {
			return d
		}
		d++
		if !more {
			return d
		}
	}
}

// keysAndValues turns zap fields into logr's key/value pairs, in order;
// an error field is its error under "err", as klog names it.
func keysAndValues(fields []zapcore.Field) []any {
	kv := make([]any, 0, 2*len(fields))
	for _, f := range fields {
		if f.Type == zapcore.ErrorType {
			if err, ok := f.Interface.(error); ok {
				key := f.Key
				if key == "error" {
					key = "err"
				}
				kv = append(kv, key, err)
				continue
			}
		}
		if f.Type == zapcore.SkipType {
			continue
		}
		enc := zapcore.NewMapObjectEncoder()
		f.AddTo(enc)
		for k, v := range enc.Fields {
			kv = append(kv, k, v)
		}
	}
	return kv
}

// WithoutHarmless wraps core, any zap core (etcd's own JSON to a file, as
// the test server keeps it), so that the entries ZapCore drops as harmless
// (etcdDropped) are dropped there too.
func WithoutHarmless(core zapcore.Core) zapcore.Core { return harmlessDropped{core} }

// harmlessDropped is WithoutHarmless's core.
type harmlessDropped struct{ zapcore.Core }

func (h harmlessDropped) With(fields []zapcore.Field) zapcore.Core {
	return harmlessDropped{h.Core.With(fields)}
}

func (h harmlessDropped) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if h.Enabled(ent.Level) {
		return ce.AddCore(ent, h)
	}
	return ce
}

func (h harmlessDropped) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	if etcdDropped(ent, fields) {
		return nil
	}
	return h.Core.Write(ent, fields)
}
