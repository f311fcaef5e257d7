package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers/csrcleaner"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/csrsigning"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// csrPrompt is how soon the signer must sign; it takes milliseconds.
const csrPrompt = 10 * time.Second

// csrRunSigner runs the signing controller with the server's cluster CA,
// the CA the API server trusts for client certificates.
func csrRunSigner(t *testing.T, s *testserver.Server) {
	t.Helper()
	runControllers(t, s, csrsigning.Descriptor())
}

// csrNewRequest returns a new private key (PEM) and a PEM CSR for it with
// subject CN user, O groups.
func csrNewRequest(t *testing.T, user string, groups ...string) (keyPEM, requestPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: groups}}, key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return keyPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// csrCreate creates a kube-apiserver-client CSR.
func csrCreate(t *testing.T, c kubernetes.Interface, name string, request []byte, usages []certificatesv1.KeyUsage, expirationSeconds *int32) {
	t.Helper()
	_, err := c.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           request,
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            usages,
			ExpirationSeconds: expirationSeconds,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// csrDecide adds an Approved or Denied condition through the approval
// subresource, as `kubectl certificate approve|deny` does.
func csrDecide(t *testing.T, c kubernetes.Interface, name string, decision certificatesv1.RequestConditionType, at time.Time) {
	t.Helper()
	ctx := context.Background()
	csr, err := c.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: decision, Status: corev1.ConditionTrue, Reason: "IntegrationTest", LastUpdateTime: metav1.NewTime(at),
	})
	if _, err := c.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// csrWait polls CSR name until done says it is, and returns it.
func csrWait(t *testing.T, c kubernetes.Interface, name, what string, done func(*certificatesv1.CertificateSigningRequest) bool) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	var csr *certificatesv1.CertificateSigningRequest
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, csrPrompt, true, func(ctx context.Context) (bool, error) {
		var err error
		csr, err = c.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		return err == nil && done(csr), nil
	})
	if err != nil {
		t.Fatalf("CSR %s: no %s within %v; last: %+v", name, what, csrPrompt, csr)
	}
	return csr
}

func csrIssued(csr *certificatesv1.CertificateSigningRequest) bool {
	return len(csr.Status.Certificate) > 0
}

// TestCSRSigningAddsUser is the "adding a user" flow: a CSR for CN
// csr-alice, O csr-team, approved, is signed by the controller, and the
// API server then authenticates its certificate as that user and group.
func TestCSRSigningAddsUser(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	csrRunSigner(t, s)
	ctx := context.Background()

	keyPEM, request := csrNewRequest(t, "csr-alice", "csr-team")
	csrCreate(t, s.Client, "alice", request, []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, ptr.To[int32](3600))
	// A denied CSR, created first, must stay unsigned.
	_, deniedRequest := csrNewRequest(t, "csr-eve")
	csrCreate(t, s.Client, "eve", deniedRequest, []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, nil)
	csrDecide(t, s.Client, "eve", certificatesv1.CertificateDenied, time.Now())
	csrDecide(t, s.Client, "alice", certificatesv1.CertificateApproved, time.Now())

	csr := csrWait(t, s.Client, "alice", "certificate", csrIssued)
	block, _ := pem.Decode(csr.Status.Certificate)
	if block == nil {
		t.Fatalf("status.certificate is not PEM: %q", csr.Status.Certificate)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if life := cert.NotAfter.Sub(cert.NotBefore); life != time.Hour+csrsigning.Backdate {
		t.Errorf("certificate lives %v, want expirationSeconds (1h) plus %v backdating", life, csrsigning.Backdate)
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("extended key usages %v, want client auth", cert.ExtKeyUsage)
	}

	cfg := rest.AnonymousClientConfig(s.AdminConfig)
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = csr.Status.Certificate, keyPEM
	alice := kubernetes.NewForConfigOrDie(cfg)
	review, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the signed certificate does not authenticate: %v", err)
	}
	if got := review.Status.UserInfo; got.Username != "csr-alice" || !slices.Contains(got.Groups, "csr-team") || !slices.Contains(got.Groups, "system:authenticated") {
		t.Errorf("authenticated as %+v, want csr-alice in csr-team", got)
	}
	// Nothing is allowed yet: authentication is not authorization.
	if _, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing configmaps as an unbound user: got %v, want Forbidden", err)
	}

	eve, err := s.Client.CertificatesV1().CertificateSigningRequests().Get(ctx, "eve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(eve.Status.Certificate) != 0 {
		t.Error("a denied CSR was signed")
	}
}

// TestCSRSigningRefusesNonClientUsages: a kube-apiserver-client CSR that
// asks for server auth is not signed but marked Failed, with upstream's
// reason and message.
func TestCSRSigningRefusesNonClientUsages(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	csrRunSigner(t, s)

	_, request := csrNewRequest(t, "csr-server")
	csrCreate(t, s.Client, "server", request, []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth}, nil)
	csrDecide(t, s.Client, "server", certificatesv1.CertificateApproved, time.Now())
	csr := csrWait(t, s.Client, "server", "Failed condition", func(csr *certificatesv1.CertificateSigningRequest) bool {
		return csrsigning.HasTrueCondition(csr, certificatesv1.CertificateFailed)
	})
	if len(csr.Status.Certificate) != 0 {
		t.Error("signed a CSR asking for server auth")
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateFailed &&
			(c.Reason != csrsigning.FailedReason || c.Message != "invalid usage for client certificate: server auth") {
			t.Errorf("Failed condition %+v, want reason %s and the invalid usage", c, csrsigning.FailedReason)
		}
	}
}

// TestCSRCleanerDeletesOld: on its first pass the cleaner deletes CSRs
// denied and issued more than an hour ago, and keeps recent ones.
func TestCSRCleanerDeletesOld(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	csrRunSigner(t, s)
	long := time.Now().Add(-2 * time.Hour)

	for _, name := range []string{"old-denied", "new-denied", "old-issued", "new-issued"} {
		_, request := csrNewRequest(t, "csr-"+name)
		csrCreate(t, s.Client, name, request, []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, nil)
	}
	csrDecide(t, s.Client, "old-denied", certificatesv1.CertificateDenied, long)
	csrDecide(t, s.Client, "new-denied", certificatesv1.CertificateDenied, time.Now())
	csrDecide(t, s.Client, "old-issued", certificatesv1.CertificateApproved, long)
	csrDecide(t, s.Client, "new-issued", certificatesv1.CertificateApproved, time.Now())
	csrWait(t, s.Client, "old-issued", "certificate", csrIssued)
	csrWait(t, s.Client, "new-issued", "certificate", csrIssued)

	runControllers(t, s, csrcleaner.Descriptor())
	var names []string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, csrPrompt, true, func(ctx context.Context) (bool, error) {
		list, err := s.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		names = nil
		for _, c := range list.Items {
			names = append(names, c.Name)
		}
		slices.Sort(names)
		return slices.Equal(names, []string{"new-denied", "new-issued"}), nil
	})
	if err != nil {
		t.Fatalf("CSRs left %v, want the recent ones only", names)
	}
}
