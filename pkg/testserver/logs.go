package testserver

import (
	"bytes"
	"io"
	"os"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// The API server logs through klog, which is one logger per process, and
// so is every k8s.io library in it. The test server routes klog, once,
// through logHub: while test servers run, each line goes to each running
// server's log (its Options.LogOutput, or a buffer that Start prints only
// if the test fails); while none runs, to standard error as before.
var hub = &logHub{sinks: map[*logSink]struct{}{}}

type logHub struct {
	install sync.Once
	mu      sync.Mutex
	sinks   map[*logSink]struct{}
}

// maxKeptLog bounds what a server keeps of its log; the oldest half goes
// when it is reached.
const maxKeptLog = 4 << 20

// logSink is one server's log: out if set, else a buffer.
type logSink struct {
	mu  sync.Mutex
	out io.Writer
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out != nil {
		return s.out.Write(p)
	}
	if s.buf.Len()+len(p) > maxKeptLog {
		keep := s.buf.Bytes()[s.buf.Len()/2:]
		if i := bytes.IndexByte(keep, '\n'); i >= 0 {
			keep = keep[i+1:]
		}
		s.buf = *bytes.NewBuffer(append([]byte("... (older lines dropped)\n"), keep...))
	}
	return s.buf.Write(p)
}

// String is what the buffer holds.
func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// attach routes klog through the hub (the first time) and adds a sink
// writing to out, or buffering when out is nil.
func (h *logHub) attach(out io.Writer) *logSink {
	h.install.Do(func() {
		// klog's own -v, if a test binary set it, stays the verbosity.
		v := 0
		for v < 10 && klog.V(klog.Level(v+1)).Enabled() {
			v++
		}
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(h), textlogger.Verbosity(v)))
		klog.SetLoggerWithOptions(logger, klog.ContextualLogger(true))
	})
	s := &logSink{out: out}
	h.mu.Lock()
	h.sinks[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// detach removes s; lines no longer reach it.
func (h *logHub) detach(s *logSink) {
	h.mu.Lock()
	delete(h.sinks, s)
	h.mu.Unlock()
}

// lingerAfterStop is how long a server's own log buffer keeps receiving
// lines after it stopped: controllers of k8s.io/apiserver (the CA file
// watchers) say "Shutting down" a moment after Stop returns, and those
// lines belong to the server, not to the test's standard error.
const lingerAfterStop = 2 * time.Second

// detachAfterStop removes s once the server's last lines are in: at once
// for a caller's writer (which may be a test's, invalid once it ended),
// after lingerAfterStop for the server's own buffer.
func (h *logHub) detachAfterStop(s *logSink) {
	if s.out != nil {
		h.detach(s)
		return
	}
	time.AfterFunc(lingerAfterStop, func() { h.detach(s) })
}

// Write sends a line to every sink, or to standard error if there is none.
func (h *logHub) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.sinks) == 0 {
		return os.Stderr.Write(p)
	}
	for s := range h.sinks {
		_, _ = s.Write(p)
	}
	return len(p), nil
}
