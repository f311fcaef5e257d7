package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// BenchmarkCreate measures ConfigMap creates through one API server in
// both shapes, started once each in the same run: `gcp start` (embedded
// etcd, one member, the controllers too) and `gcp apiserver` against three
// `gcp etcd` members with client and peer mTLS (every write waits for a
// quorum of two). It reports creates/s and the p50 and p99 latency at 1,
// 8 and 32 concurrent clients; docs/performance.md has the figures.
//
//	go test ./test/e2e -run '^$' -bench Create -benchtime 2000x
func BenchmarkCreate(b *testing.B) {
	shapes := []struct {
		name  string
		start func(b *testing.B) kubernetes.Interface
	}{
		{"all-in-one", func(b *testing.B) kubernetes.Interface {
			a := startAllInOne(b, b.TempDir())
			return benchClient(b, a.kubeconfig(), "")
		}},
		{"split-3-members", func(b *testing.B) kubernetes.Interface {
			c := newHACluster(b)
			a := &allInOne{t: b, binary: gcpBinary, dataDir: c.base}
			return benchClient(b, a.kubeconfig(), c.startAPIServer(a))
		}},
	}
	for _, shape := range shapes {
		b.Run(shape.name, func(b *testing.B) {
			client := shape.start(b)
			for _, clients := range []int{1, 8, 32} {
				b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
					ns := fmt.Sprintf("bench-%d-%d", clients, time.Now().UnixNano())
					if _, err := client.CoreV1().Namespaces().Create(context.Background(),
						&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
						b.Fatal(err)
					}
					latencies := make([]time.Duration, b.N)
					var next atomic.Int64
					var failed atomic.Int64
					var wg sync.WaitGroup
					b.ResetTimer()
					start := time.Now()
					for range clients {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for {
								i := int(next.Add(1) - 1)
								if i >= b.N {
									return
								}
								t0 := time.Now()
								_, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
									ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)},
									Data:       map[string]string{"k": "v"},
								}, metav1.CreateOptions{})
								latencies[i] = time.Since(t0)
								if err != nil {
									failed.Add(1)
								}
							}
						}()
					}
					wg.Wait()
					elapsed := time.Since(start)
					b.StopTimer()
					if n := failed.Load(); n > 0 {
						b.Errorf("%d of %d creates failed", n, b.N)
					}
					slices.Sort(latencies)
					b.ReportMetric(float64(b.N)/elapsed.Seconds(), "creates/s")
					b.ReportMetric(float64(latencies[b.N/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(latencies[b.N*99/100].Microseconds())/1000, "p99-ms")
				})
			}
		})
	}
}

// benchClient is a client of server (the kubeconfig's when empty) without
// client-side rate limits.
func benchClient(b *testing.B, kubeconfig, server string) kubernetes.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags(server, kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return client
}
