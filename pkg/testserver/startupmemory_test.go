package testserver

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// forcedGCs is how many garbage collections the process was made to run
// (runtime.GC, debug.FreeOSMemory).
func forcedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestReadyServerForcesNoGC: once a test server is ready (its log says
// "Control plane is ready"), it leaves the memory its start dropped to the
// runtime for the next server, instead of forcing a collection of the
// whole test process to return it to the operating system, as gcp start
// does. gcp start's release follows that line in the goroutine that logs
// it, so the count is taken once that goroutine has ended. The count is
// the process's: the test runs alone (no t.Parallel).
func TestReadyServerForcesNoGC(t *testing.T) {
	before := forcedGCs()
	log := &readyLog{}
	s, err := Run(context.Background(), Options{LogOutput: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	poll.Until(t, 10*time.Millisecond, 30*time.Second, func() error {
		log.mu.Lock()
		defer log.mu.Unlock()
		switch {
		case log.goroutine == "":
			return fmt.Errorf("the server never logged that it was ready:\n%s", log.buf.String())
		case goroutineRuns(log.goroutine):
			return fmt.Errorf("goroutine %s, which logged that the server was ready, still runs", log.goroutine)
		}
		return nil
	})
	if n := forcedGCs() - before; n != 0 {
		t.Errorf("%d forced garbage collections while the server started", n)
	}
}

// readyLog keeps a server's log and the goroutine that wrote "Control
// plane is ready" (the test server's logger writes in the caller's
// goroutine).
type readyLog struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	goroutine string
}

func (l *readyLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.goroutine == "" && bytes.Contains(p, []byte("Control plane is ready")) {
		// The stack's first line: "goroutine 123 [running]:".
		stack := make([]byte, 64)
		l.goroutine = string(bytes.Fields(stack[:runtime.Stack(stack, false)])[1])
	}
	return l.buf.Write(p)
}

// goroutineRuns says whether the goroutine numbered id still runs.
func goroutineRuns(id string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], []byte("goroutine "+id+" ["))
		}
		buf = make([]byte, 2*len(buf))
	}
}
