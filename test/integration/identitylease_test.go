package integration

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// TestIdentityLeaseGC: an identity Lease whose holder stopped renewing it
// is deleted, as kube-apiserver deletes them; a renewed one, an
// unlabelled one and the server's own are kept.
func TestIdentityLeaseGC(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{APIServer: func(o *options.Options) {
		o.IdentityLeaseDuration, o.IdentityLeaseRenewInterval = 2*time.Second, 500*time.Millisecond
	}})
	ctx := context.Background()
	leases := s.Client.CoordinationV1().Leases("kube-system")
	identity := map[string]string{apiserver.IdentityLabel: apiserver.IdentityLabelValue}
	create := func(name string, labels map[string]string, renewed time.Time, seconds int32) {
		t.Helper()
		renew := metav1.NewMicroTime(renewed)
		_, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &renew, LeaseDurationSeconds: &seconds},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	create("kube-apiserver-dead", identity, time.Now().Add(-time.Hour), 2)
	create("kube-apiserver-alive", identity, time.Now(), 3600)
	create("not-an-identity", nil, time.Now().Add(-time.Hour), 2)

	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := leases.Get(ctx, "kube-apiserver-dead", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("expired identity lease not collected: %v", err)
	}
	for _, name := range []string{"kube-apiserver-alive", "not-an-identity"} {
		if _, err := leases.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("lease %s: %v, want it kept", name, err)
		}
	}
	own, err := leases.List(ctx, metav1.ListOptions{LabelSelector: apiserver.IdentityLabel + "=" + apiserver.IdentityLabelValue})
	if err != nil || len(own.Items) != 2 {
		t.Errorf("identity leases after collection: %v, %v; want the server's own and the renewed one", own, err)
	}
}
