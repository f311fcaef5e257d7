package testserver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcp-project/gcp/pkg/layering"
)

// BenchmarkStart starts a server until /readyz is 200 and stops it, once
// per iteration: what a test pays for its own server. ns/op is the pair;
// start-s/op is the start alone, stop-s/op the stop alone.
//
//	go test ./pkg/testserver -run '^$' -bench Start -benchtime 10x
func BenchmarkStart(b *testing.B) {
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"generic", Options{}},
		{"generic-with-controllers", Options{Controllers: []string{"*"}}},
		{"core-rbac-crds", Options{Stack: layering.Generic().Without(layering.Coordination, layering.FlowControl, layering.AdmissionRegistration,
			layering.Certificates, layering.APIServerInternal, layering.Aggregation, layering.Events)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var start, stop time.Duration
			for b.Loop() {
				t0 := time.Now()
				s, err := Run(context.Background(), c.o)
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
		})
	}
}

// BenchmarkParallel starts four servers at once, has each create and read
// a ConfigMap, and stops them, once per iteration: the wall clock of four
// parallel tests that each have their own server.
//
//	go test ./pkg/testserver -run '^$' -bench Parallel -benchtime 5x
func BenchmarkParallel(b *testing.B) {
	const servers = 4
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make([]error, servers)
		for i := range servers {
			wg.Go(func() { errs[i] = startUseStop(context.Background()) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func startUseStop(ctx context.Context) error {
	s, err := Run(ctx, Options{})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		_ = s.Stop()
		return fmt.Errorf("create: %w", err)
	}
	if _, err := s.Client.CoreV1().ConfigMaps("default").Get(ctx, "c", metav1.GetOptions{}); err != nil {
		_ = s.Stop()
		return fmt.Errorf("get: %w", err)
	}
	return s.Stop()
}
