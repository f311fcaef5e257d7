package integration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// TestIdentityLease: the API server keeps an identity Lease in
// kube-system, labelled as kube-apiserver labels its own, with the
// configured duration, and renews it.
func TestIdentityLease(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{APIServer: func(o *options.Options) {
		o.IdentityLeaseDuration, o.IdentityLeaseRenewInterval = 5*time.Second, time.Second
	}})
	ctx := context.Background()
	selector := apiserver.IdentityLabel + "=" + apiserver.IdentityLabelValue
	var first time.Time
	var name string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		leases, err := s.Client.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(leases.Items) != 1 || leases.Items[0].Spec.RenewTime == nil {
			return false, nil
		}
		l := leases.Items[0]
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != l.Name || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 5 ||
			l.Labels["kubernetes.io/hostname"] == "" {
			t.Fatalf("identity lease %s: holder %v, duration %v, labels %v", l.Name, l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Labels)
		}
		name, first = l.Name, l.Spec.RenewTime.Time
		return true, nil
	})
	if err != nil {
		t.Fatalf("no identity lease labelled %s in kube-system: %v", selector, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := s.Client.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(first), nil
	})
	if err != nil {
		t.Fatalf("identity lease %s was not renewed: %v", name, err)
	}
}
