package integration

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// TestWatchFromCompactedRevisionIsGone compacts etcd quickly and shows a
// watch from before the compaction ends with 410 Gone, as upstream.
func TestWatchFromCompactedRevisionIsGone(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{
		Stack: layering.Generic(),
		APIServer: func(o *options.Options) {
			o.Etcd.StorageConfig.CompactionInterval = time.Second
			o.Etcd.EnableWatchCache = false
		},
	})
	ctx := context.Background()
	cms := s.Client.CoreV1().ConfigMaps("default")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Writes after `first` move the revision on; the compactor then removes
	// history up to a revision past it.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "filler-"}}, metav1.CreateOptions{}); err != nil {
			return false, err
		}
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
		if err != nil {
			return apierrors.IsGone(err) || apierrors.IsResourceExpired(err), nil
		}
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			status, ok := ev.Object.(*metav1.Status)
			return ok && status.Code == http.StatusGone, nil
		case <-time.After(500 * time.Millisecond):
			return false, nil
		}
	})
	if err != nil {
		t.Fatalf("watch from a compacted resourceVersion never got 410 Gone: %v", err)
	}
}
