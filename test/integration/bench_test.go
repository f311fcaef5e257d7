package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkConfigMapGet measures GET of one configmap by the admin user
// through real HTTPS, authentication, authorization, the watch cache and
// protobuf encoding. It is the baseline the RBAC issue compares a
// non-masters user against:
//
//	go test ./test/integration -run '^$' -bench ConfigMapGet -benchtime 5s
func BenchmarkConfigMapGet(b *testing.B) {
	s := startGeneric(b)
	ctx := context.Background()
	cms := s.Client.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cms.Get(ctx, "bench", metav1.GetOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
