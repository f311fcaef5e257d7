package testserver

import (
	"context"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
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
// does. The count is the process's: the test runs alone (no t.Parallel).
func TestReadyServerForcesNoGC(t *testing.T) {
	before := forcedGCs()
	s, err := Run(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.Log(), "Control plane is ready") {
		if time.Now().After(deadline) {
			t.Fatalf("the server never logged that it was ready:\n%s", s.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// gcp start's release follows that line at once; give it time to.
	time.Sleep(300 * time.Millisecond)
	if n := forcedGCs() - before; n != 0 {
		t.Errorf("%d forced garbage collections while the server started", n)
	}
}
