package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/gcp-project/gcp/pkg/testserver"
)

// BenchmarkTestServerStart starts a test server (default stack, no CRDs,
// no controllers) and stops it, once per iteration: what each test that
// calls testserver.Start pays. ns/op is the pair; start-s/op is the start
// alone (until /readyz answers 200), stop-s/op the stop alone.
func BenchmarkTestServerStart(b *testing.B) {
	var start, stop time.Duration
	for b.Loop() {
		t0 := time.Now()
		s, err := testserver.Run(context.Background(), testserver.Options{})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := s.Stop(); err != nil {
			b.Fatal(err)
		}
		start += t1.Sub(t0)
		stop += time.Since(t1)
	}
	b.ReportMetric(start.Seconds()/float64(b.N), "start-s/op")
	b.ReportMetric(stop.Seconds()/float64(b.N), "stop-s/op")
}
