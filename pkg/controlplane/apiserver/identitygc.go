package apiserver

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

const (
	identityGCHookName = "start-apiserver-identity-lease-garbage-collector"
	// maxIdentityGCPeriod is how often kube-apiserver collects expired
	// identity Leases.
	maxIdentityGCPeriod = time.Hour
)

// identityGCPeriod is how often expired identity Leases are collected:
// hourly as kube-apiserver does, or every lease duration when that is
// shorter, so that with short leases (tests, fast failover) a dead
// server's lease goes within about two durations.
func identityGCPeriod(leaseDuration time.Duration) time.Duration {
	return min(maxIdentityGCPeriod, max(leaseDuration, time.Second))
}

// identityLeaseGCHook deletes, in every API server as upstream does, the
// identity Leases in kube-system whose holder stopped renewing them: those
// with the identity label whose renew time plus duration has passed. The
// delete carries the resourceVersion seen, so a lease renewed in between
// is kept; other servers deleting the same lease are harmless.
func identityLeaseGCHook(leaseDuration time.Duration) genericapiserver.PostStartHookFunc {
	return func(ctx genericapiserver.PostStartHookContext) error {
		client, err := kubernetes.NewForConfig(ctx.LoopbackClientConfig)
		if err != nil {
			return err
		}
		selector := labels.SelectorFromSet(labels.Set{IdentityLabel: IdentityLabelValue}).String()
		factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
			informers.WithNamespace(metav1.NamespaceSystem),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
		leases := factory.Coordination().V1().Leases()
		informer := leases.Informer()
		factory.Start(ctx.Done())
		go func() {
			if !cache.WaitFor(ctx, "", informer.HasSyncedChecker()) {
				return
			}
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				all, err := leases.Lister().Leases(metav1.NamespaceSystem).List(labels.Everything())
				if err != nil {
					return
				}
				now := time.Now()
				for _, l := range all {
					if !identityLeaseExpired(l, now) {
						continue
					}
					rv := l.ResourceVersion
					err := client.CoordinationV1().Leases(l.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{
						Preconditions: &metav1.Preconditions{ResourceVersion: &rv},
					})
					switch {
					case err == nil:
						klog.InfoS("Deleted expired API server identity lease", "lease", klog.KObj(l))
					case apierrors.IsNotFound(err), apierrors.IsConflict(err):
					default:
						klog.ErrorS(err, "Deleting expired API server identity lease", "lease", klog.KObj(l))
					}
				}
			}, identityGCPeriod(leaseDuration))
		}()
		return nil
	}
}

// identityLeaseExpired reports whether l's holder stopped renewing it: no
// renew time, or renew time plus duration before now.
func identityLeaseExpired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second).Before(now)
}
