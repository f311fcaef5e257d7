package testserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcp-project/gcp/pkg/layering"
)

// BenchmarkStart starts a server until /readyz is 200 and stops it, once
// per iteration: what a test pays for its own server. ns/op is the pair;
// start-s/op is the start alone, stop-s/op the stop alone, cpu-s/op the
// process's CPU time (user and system) for the pair, which a busy machine
// changes less than the wall clock.
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
			cpu0 := cpuTime()
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
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// BenchmarkParallel runs four tests at once, each creating and reading a
// ConfigMap, once per iteration: own-servers starts and stops a server
// per test, shared-server one server for the four, each test in a
// namespace of its own (RunMain and Server.Namespace). ns/op is the wall
// clock of the four, cpu-s/op the CPU time they took.
//
//	go test ./pkg/testserver -run '^$' -bench Parallel -benchtime 5x
func BenchmarkParallel(b *testing.B) {
	const tests = 4
	for _, c := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"own-servers", func(ctx context.Context) error {
			return inParallel(tests, func() error {
				s, err := Run(ctx, Options{})
				if err != nil {
					return err
				}
				return errors.Join(useServer(ctx, s, "default"), s.Stop())
			})
		}},
		{"shared-server", func(ctx context.Context) error {
			s, err := Run(ctx, Options{})
			if err != nil {
				return err
			}
			err = inParallel(tests, func() error {
				ns, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}, metav1.CreateOptions{})
				if err != nil {
					return err
				}
				return errors.Join(useServer(ctx, s, ns.Name), s.Client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}))
			})
			return errors.Join(err, s.Stop())
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				if err := c.run(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// inParallel runs f n times at once and joins their errors.
func inParallel(n int, f func() error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = f() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// useServer creates and reads a ConfigMap in ns.
func useServer(ctx context.Context, s *Server, ns string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}
	if _, err := s.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if _, err := s.Client.CoreV1().ConfigMaps(ns).Get(ctx, "c", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	return nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
