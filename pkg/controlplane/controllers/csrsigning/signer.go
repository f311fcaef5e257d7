// Package csrsigning is the controller that signs approved
// CertificateSigningRequests for the signer kubernetes.io/kube-apiserver-client
// with a CA from files, as kube-controller-manager's csrsigning controller
// does: the CA is the one the API server trusts for client certificates, so
// a signed certificate is a way in for the user and groups of its subject.
//
// gcp has no kubelets: the signers kubernetes.io/kubelet-serving,
// kubernetes.io/kube-apiserver-client-kubelet and kubernetes.io/legacy-unknown
// are not signed here, and their CSRs stay approved without a certificate
// unless another signer serves them.
package csrsigning

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// SignerName is the only signer this controller signs for.
const SignerName = certificatesv1.KubeAPIServerClientSignerName

// FailedReason is the reason of the Failed condition set on a CSR the
// signer refuses, upstream's.
const FailedReason = "SignerValidationFailure"

// workers is how many CSRs are signed at once, upstream's.
const workers = 5

// Name is the controller's name for --controllers, kube-controller-manager's.
const Name = "certificatesigningrequest-signing-controller"

// ServiceAccount is the ServiceAccount in kube-system the CSR signer
// (shared with the CSR cleaner, as kube-controller-manager's are) runs as,
// kube-controller-manager's name for it; Rules are its permissions.
const ServiceAccount = "certificate-controller"

// Rules are what ServiceAccount may do: ClusterRole
// system:controller:<ServiceAccount>.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Signs approved CSRs for the signers it serves. The approval and
		// access review rules are kube-controller-manager's certificate-controller
		// role's, kept so that the role is what it was.
		bootstrappolicy.NewRule("get", "list", "watch", "delete").Groups(certificatesv1.GroupName).Resources("certificatesigningrequests").Rule(),
		bootstrappolicy.NewRule("update").Groups(certificatesv1.GroupName).Resources("certificatesigningrequests/status", "certificatesigningrequests/approval").Rule(),
		bootstrappolicy.NewRule("sign").Groups(certificatesv1.GroupName).Resources("signers").Names(certificatesv1.KubeAPIServerClientSignerName).Rule(),
		bootstrappolicy.NewRule("create").Groups("authorization.k8s.io").Resources("subjectaccessreviews").Rule(),
		bootstrappolicy.EventsRule(),
	}
}

// Descriptor describes the controller for the controller manager. Without
// a CA (--cluster-signing-cert-file and --cluster-signing-key-file, or the
// kube-apiserver-client signer's own pair) it does not sign and says why,
// as kube-controller-manager skips it.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{
		Name:           Name,
		ServiceAccount: ServiceAccount,
		Rules:          Rules(),
		Requires:       []schema.GroupVersionResource{certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")},
		Aliases:        []string{"csrsigning"},
		NewOptions:     func() controllers.ControllerOptions { return NewOptions() },
		New: func(ctx context.Context, c controllers.Context) (controllers.Controller, error) {
			o, _ := c.Options.(*Options)
			if o == nil {
				o = NewOptions()
			}
			certFile, keyFile := o.KubeAPIServerClientFiles()
			if certFile == "" || keyFile == "" {
				return skipped{}, nil
			}
			client, err := c.ClientBuilder.Client(ServiceAccount)
			if err != nil {
				return nil, fmt.Errorf("client for %s: %w", ServiceAccount, err)
			}
			ca, err := dynamiccertificates.NewDynamicServingContentFromFiles("csr-controller", certFile, keyFile)
			if err != nil {
				return nil, fmt.Errorf("error reading CA cert file %q: %v", certFile, err)
			}
			duration := o.Duration
			if duration == 0 {
				duration = DefaultClusterSigningDuration
			}
			return New(c.InformerFactory, client, ca, duration)
		},
	}
}

// skipped stands for the signer when it has no CA: it logs why and idles.
type skipped struct{}

func (skipped) Name() string { return Name }

func (skipped) Run(ctx context.Context) {
	klog.FromContext(ctx).Info("Skipping CSR signer controller because no csr cert/key was specified")
	<-ctx.Done()
}

// CAContent is where the signer reads its CA from, each time it signs, so
// that a rotated CA is picked up: a
// dynamiccertificates.DynamicCertKeyPairContent watching the files, or a
// fixed pair in tests. If it also implements
// dynamiccertificates.ControllerRunner, the signer runs it.
type CAContent interface {
	// CurrentCertKeyContent returns the PEM CA certificate and key.
	CurrentCertKeyContent() (certPEM, keyPEM []byte)
}

// Signer signs approved kubernetes.io/kube-apiserver-client CSRs.
type Signer struct {
	client      kubernetes.Interface
	lister      certificateslisters.CertificateSigningRequestLister
	synced      []cache.DoneChecker
	queue       workqueue.TypedRateLimitingInterface[string]
	caContent   CAContent
	maxDuration time.Duration
	clock       clock.PassiveClock

	mu                  sync.Mutex
	caCertPEM, caKeyPEM []byte
	ca                  *Authority
}

// New registers the signer's handlers on factory's CSR informer; it does
// not start it. Certificates live at most maxDuration.
func New(factory informers.SharedInformerFactory, client kubernetes.Interface, ca CAContent, maxDuration time.Duration) (*Signer, error) {
	if maxDuration <= 0 {
		return nil, fmt.Errorf("the longest certificate lifetime must be positive, got %v", maxDuration)
	}
	csrs := factory.Certificates().V1().CertificateSigningRequests()
	s := &Signer{
		client:      client,
		lister:      csrs.Lister(),
		caContent:   ca,
		maxDuration: maxDuration,
		clock:       clock.RealClock{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "certificate"},
		),
	}
	if _, err := s.currentCA(); err != nil {
		return nil, err
	}
	enqueue := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && csr.Spec.SignerName == SignerName && len(csr.Status.Certificate) == 0 {
			s.queue.Add(csr.Name)
		}
	}
	reg, err := csrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("certificatesigningrequest informer: %w", err)
	}
	s.synced = []cache.DoneChecker{reg.HasSyncedChecker()}
	return s, nil
}

// Name implements controllers.Controller.
func (s *Signer) Name() string { return Name }

// Run signs until ctx is done, watching the CA files if they are files.
func (s *Signer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if runner, ok := s.caContent.(dynamiccertificates.ControllerRunner); ok {
		wg.Go(func() { runner.Run(ctx, 1) })
	}
	controllers.Workers[string]{Name: s.Name(), Queue: s.queue, Count: workers, Synced: s.synced, Sync: s.sync}.Run(ctx)
	wg.Wait()
}

// currentCA returns the CA, parsing it again when its content changed.
func (s *Signer) currentCA() (*Authority, error) {
	certPEM, keyPEM := s.caContent.CurrentCertKeyContent()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ca != nil && bytes.Equal(certPEM, s.caCertPEM) && bytes.Equal(keyPEM, s.caKeyPEM) {
		return s.ca, nil
	}
	ca, err := ParseAuthority(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	s.ca, s.caCertPEM, s.caKeyPEM = ca, certPEM, keyPEM
	return ca, nil
}

// sync signs CSR name if it is approved, not failed, not yet issued and
// for SignerName; a request the signer must not sign gets a Failed
// condition instead.
func (s *Signer) sync(ctx context.Context, name string) error {
	csr, err := s.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(csr.Status.Certificate) > 0 || !IsApproved(csr) || HasTrueCondition(csr, certificatesv1.CertificateFailed) ||
		csr.Spec.SignerName != SignerName {
		return nil
	}
	req, err := ParseCSR(csr.Spec.Request)
	if err != nil {
		return fmt.Errorf("unable to parse csr %q: %v", csr.Name, err)
	}
	csr = csr.DeepCopy()
	if err := ValidateKubeAPIServerClientUsages(csr.Spec.Usages); err != nil {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type:           certificatesv1.CertificateFailed,
			Status:         corev1.ConditionTrue,
			Reason:         FailedReason,
			Message:        err.Error(),
			LastUpdateTime: metav1.NewTime(s.clock.Now()),
		})
		if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("error adding failure condition for csr: %v", err)
		}
		klog.FromContext(ctx).V(2).Info("Refused to sign CSR", "csr", csr.Name, "reason", err)
		return nil
	}
	ca, err := s.currentCA()
	if err != nil {
		return err
	}
	certPEM, err := ca.Sign(req, csr.Spec.Usages, Duration(csr.Spec.ExpirationSeconds, s.maxDuration), s.clock.Now())
	if err != nil {
		return fmt.Errorf("error auto signing csr: %v", err)
	}
	csr.Status.Certificate = certPEM
	if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("error updating signature for csr: %v", err)
	}
	klog.FromContext(ctx).V(2).Info("Signed CSR", "csr", csr.Name)
	return nil
}

// ValidateKubeAPIServerClientUsages checks the usages of a
// kubernetes.io/kube-apiserver-client CSR as upstream's signer does:
// client auth is required; digital signature and key encipherment may be
// added; nothing else. Upstream's signer puts no rule on the subject or
// the subject alternative names of this signer's requests, nor does this.
func ValidateKubeAPIServerClientUsages(usages []certificatesv1.KeyUsage) error {
	hasClientAuth := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			hasClientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !hasClientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

// ParseCSR decodes a PEM CERTIFICATE REQUEST.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// IsApproved reports whether csr has an Approved condition and no Denied
// one.
func IsApproved(csr *certificatesv1.CertificateSigningRequest) bool {
	approved, denied := false, false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		}
	}
	return approved && !denied
}

// HasTrueCondition reports whether csr has a condition of type t whose
// status is True or empty.
func HasTrueCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && (c.Status == "" || c.Status == corev1.ConditionTrue) {
			return true
		}
	}
	return false
}
