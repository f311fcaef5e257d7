// Package csrcleaner is the controller that deletes
// CertificateSigningRequests once they are of no more use, as
// kube-controller-manager's csrcleaner does: every PollingInterval it goes
// through all CSRs and deletes those issued, denied or failed more than an
// hour ago, pending for more than a day, approved but not issued for more
// than a day, or whose certificate has expired.
package csrcleaner

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// Upstream's periods.
const (
	// PollingInterval is how often every CSR is checked.
	PollingInterval = time.Hour
	// ApprovedExpiration is how long an issued CSR is kept after its
	// approval.
	ApprovedExpiration = time.Hour
	// DeniedExpiration is how long a denied or failed CSR is kept after
	// the condition was set.
	DeniedExpiration = time.Hour
	// PendingExpiration is how long a CSR is kept pending after its
	// creation, and approved without a certificate after its approval.
	PendingExpiration = 24 * time.Hour
)

// Name is the controller's name for --controllers, kube-controller-manager's.
const Name = "certificatesigningrequest-cleaner-controller"

// ServiceAccount is the ServiceAccount in kube-system the CSR cleaner
// (shared with the CSR signer, as kube-controller-manager's are) runs as,
// kube-controller-manager's name for it; Rules are its permissions.
const ServiceAccount = "certificate-controller"

// Rules are what ServiceAccount may do: ClusterRole
// system:controller:<ServiceAccount>.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Lists CSRs and deletes old ones.
		bootstrappolicy.NewRule("get", "list", "watch", "delete").Groups(certificatesv1.GroupName).Resources("certificatesigningrequests").Rule(),
	}
}

// Descriptor describes the controller for the controller manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{
		Name:           Name,
		ServiceAccount: ServiceAccount,
		Rules:          Rules(),
		Requires:       []schema.GroupVersionResource{certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")},
		Aliases:        []string{"csrcleaner"},
		New: func(_ context.Context, c controllers.Context) (controllers.Controller, error) {
			client, err := c.ClientBuilder.Client(ServiceAccount)
			if err != nil {
				return nil, fmt.Errorf("client for %s: %w", ServiceAccount, err)
			}
			return New(c.InformerFactory, client, clock.RealClock{})
		},
	}
}

// Cleaner deletes old CSRs.
type Cleaner struct {
	client kubernetes.Interface
	lister certificateslisters.CertificateSigningRequestLister
	synced cache.DoneChecker
	clock  clock.WithTicker
}

// New registers the cleaner's CSR informer in factory, without starting
// it. clk tells the time and ticks every PollingInterval.
func New(factory informers.SharedInformerFactory, client kubernetes.Interface, clk clock.WithTicker) (*Cleaner, error) {
	csrs := factory.Certificates().V1().CertificateSigningRequests()
	// A handler that does nothing still makes the factory start the
	// informer, and tells when it has synced.
	reg, err := csrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{})
	if err != nil {
		return nil, fmt.Errorf("certificatesigningrequest informer: %w", err)
	}
	return &Cleaner{client: client, lister: csrs.Lister(), synced: reg.HasSyncedChecker(), clock: clk}, nil
}

// Name implements controllers.Controller.
func (c *Cleaner) Name() string { return Name }

// Run cleans once the informer has synced, then every PollingInterval,
// until ctx is done.
func (c *Cleaner) Run(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", c.Name())
	logger.Info("Starting controller")
	defer logger.Info("Shutting down controller")
	if !cache.WaitFor(ctx, "", c.synced) {
		return
	}
	ticker := c.clock.NewTicker(PollingInterval)
	defer ticker.Stop()
	for {
		c.Clean(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// Clean deletes every cached CSR that ShouldDelete says is done with.
func (c *Cleaner) Clean(ctx context.Context) {
	logger := klog.FromContext(ctx)
	csrs, err := c.lister.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Unable to list CSRs")
		return
	}
	now := c.clock.Now()
	for _, csr := range csrs {
		why := ShouldDelete(csr, now)
		if why == "" {
			continue
		}
		logger.Info("Cleaning CSR", "csr", csr.Name, "reason", why)
		// The UID precondition spares a CSR re-created under the same name.
		err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &csr.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			logger.Error(err, "Error while attempting to clean CSR", "csr", csr.Name)
		}
	}
}

// ShouldDelete says why csr is to be deleted at now, or "" if it is
// kept, by upstream's rules.
func ShouldDelete(csr *certificatesv1.CertificateSigningRequest, now time.Time) string {
	issued := len(csr.Status.Certificate) > 0
	olderThan := func(t metav1.Time, d time.Duration) bool { return !t.IsZero() && now.Sub(t.Time) > d }
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			if issued && olderThan(c.LastUpdateTime, ApprovedExpiration) {
				return fmt.Sprintf("issued and approved more than %v ago", ApprovedExpiration)
			}
			if !issued && olderThan(c.LastUpdateTime, PendingExpiration) {
				return fmt.Sprintf("approved but not issued for more than %v", PendingExpiration)
			}
			if issued && certificateExpired(csr.Status.Certificate, now) {
				return "its certificate has expired"
			}
		case certificatesv1.CertificateDenied:
			if olderThan(c.LastUpdateTime, DeniedExpiration) {
				return fmt.Sprintf("denied more than %v ago", DeniedExpiration)
			}
		case certificatesv1.CertificateFailed:
			if olderThan(c.LastUpdateTime, DeniedExpiration) {
				return fmt.Sprintf("failed more than %v ago", DeniedExpiration)
			}
		}
	}
	if len(csr.Status.Conditions) == 0 && olderThan(csr.CreationTimestamp, PendingExpiration) {
		return fmt.Sprintf("pending for more than %v", PendingExpiration)
	}
	return ""
}

// certificateExpired reports whether the first certificate of the PEM
// bundle has expired at now; an unreadable one has not.
func certificateExpired(certPEM []byte, now time.Time) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	certs, err := x509.ParseCertificates(block.Bytes)
	if err != nil || len(certs) == 0 {
		return false
	}
	return now.After(certs[0].NotAfter)
}
