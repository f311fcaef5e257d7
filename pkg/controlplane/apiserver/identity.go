package apiserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
)

// Labels of an API server's identity Lease, as kube-apiserver sets them,
// so `kubectl get leases -n kube-system -l apiserver.kubernetes.io/identity`
// lists the API servers that are alive.
const (
	IdentityLabel      = "apiserver.kubernetes.io/identity"
	IdentityLabelValue = "kube-apiserver"
	identityHookName   = "start-apiserver-identity-lease"
)

// identityLeaseName is the name of this server's identity Lease:
// kube-apiserver-<hash> of the host name and the serving address, so two
// API servers on one host (on different ports) have one each.
func identityLeaseName(hostname, servingAddress string) string {
	sum := sha256.Sum256([]byte(hostname + "\x00" + IdentityLabelValue + "\x00" + servingAddress))
	return IdentityLabelValue + "-" + hex.EncodeToString(sum[:8])
}

// identityLeaseHook keeps this server's identity Lease in kube-system,
// renewed every renew and valid for duration, with k8s.io/component-helpers'
// lease controller, until the server stops.
func identityLeaseHook(servingAddress string, duration, renew time.Duration) genericapiserver.PostStartHookFunc {
	return func(ctx genericapiserver.PostStartHookContext) error {
		client, err := kubernetes.NewForConfig(ctx.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("identity lease: %w", err)
		}
		hostname, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("identity lease: %w", err)
		}
		name := identityLeaseName(hostname, servingAddress)
		controller := lease.NewController(clock.RealClock{}, client, name, int32(duration/time.Second), nil, renew,
			name, metav1.NamespaceSystem, func(l *coordinationv1.Lease) error {
				if l.Labels == nil {
					l.Labels = map[string]string{}
				}
				l.Labels[IdentityLabel] = IdentityLabelValue
				l.Labels["kubernetes.io/hostname"] = hostname
				return nil
			})
		go controller.Run(ctx)
		return nil
	}
}
