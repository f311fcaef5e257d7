package csrcleaner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// certPEM is a self-signed certificate ending at notAfter.
func certPEM(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: start.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

type condition struct {
	t  certificatesv1.RequestConditionType
	at time.Time
}

func newCSR(name string, created time.Time, cert []byte, conditions ...condition) *certificatesv1.CertificateSigningRequest {
	c := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeAPIServerClientSignerName},
	}
	c.Status.Certificate = cert
	for _, cond := range conditions {
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: cond.t, Status: corev1.ConditionTrue, LastUpdateTime: metav1.NewTime(cond.at),
		})
	}
	return c
}

func TestShouldDelete(t *testing.T) {
	now := start.Add(48 * time.Hour)
	valid := certPEM(t, now.Add(time.Hour))
	expired := certPEM(t, now.Add(-time.Minute))
	approved := certificatesv1.CertificateApproved
	denied := certificatesv1.CertificateDenied
	failed := certificatesv1.CertificateFailed
	for _, tc := range []struct {
		name   string
		csr    *certificatesv1.CertificateSigningRequest
		delete bool
	}{
		{"pending, young", newCSR("a", now.Add(-23*time.Hour), nil), false},
		{"pending, more than a day", newCSR("a", now.Add(-25*time.Hour), nil), true},
		{"issued, approved 59m ago", newCSR("a", now.Add(-2*time.Hour), valid, condition{approved, now.Add(-59 * time.Minute)}), false},
		{"issued, approved 61m ago", newCSR("a", now.Add(-2*time.Hour), valid, condition{approved, now.Add(-61 * time.Minute)}), true},
		{"issued, approval time unknown", newCSR("a", now.Add(-30*time.Hour), valid, condition{approved, time.Time{}}), false},
		{"issued, expired certificate", newCSR("a", now.Add(-2*time.Hour), expired, condition{approved, now.Add(-time.Minute)}), true},
		{"approved, not issued, 23h", newCSR("a", now.Add(-30*time.Hour), nil, condition{approved, now.Add(-23 * time.Hour)}), false},
		{"approved, not issued, 25h", newCSR("a", now.Add(-30*time.Hour), nil, condition{approved, now.Add(-25 * time.Hour)}), true},
		{"denied 59m ago", newCSR("a", now.Add(-30*time.Hour), nil, condition{denied, now.Add(-59 * time.Minute)}), false},
		{"denied 61m ago", newCSR("a", now.Add(-2*time.Hour), nil, condition{denied, now.Add(-61 * time.Minute)}), true},
		{"failed 59m ago", newCSR("a", now.Add(-30*time.Hour), nil, condition{approved, now.Add(-time.Hour)}, condition{failed, now.Add(-59 * time.Minute)}), false},
		{"failed 61m ago", newCSR("a", now.Add(-2*time.Hour), nil, condition{approved, now.Add(-2 * time.Hour)}, condition{failed, now.Add(-61 * time.Minute)}), true},
		{"unreadable certificate, recent approval", newCSR("a", now.Add(-2*time.Hour), []byte("junk"), condition{approved, now.Add(-time.Minute)}), false},
	} {
		why := ShouldDelete(tc.csr, now)
		if (why != "") != tc.delete {
			t.Errorf("%s: ShouldDelete = %q, want delete %v", tc.name, why, tc.delete)
		}
	}
}

// TestRun: the cleaner deletes what is old at once, and what ages later
// at the next poll, with a fake clock.
func TestRun(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	oldPending := newCSR("old-pending", start.Add(-25*time.Hour), nil)
	youngPending := newCSR("young-pending", start.Add(-23*time.Hour), nil)
	denied := newCSR("denied", start.Add(-time.Hour), nil, condition{certificatesv1.CertificateDenied, start.Add(-10 * time.Minute)})
	issued := newCSR("issued", start.Add(-time.Hour), certPEM(t, start.Add(365*24*time.Hour)), condition{certificatesv1.CertificateApproved, start.Add(-time.Minute)})
	client := fake.NewClientset(oldPending, youngPending, denied, issued)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(factory, client, clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown() })
	factory.Start(ctx.Done())
	go func() { defer close(done); c.Run(ctx) }()

	left := func(want ...string) {
		t.Helper()
		var got []string
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			got = nil
			for _, c := range list.Items {
				got = append(got, c.Name)
			}
			slices.Sort(got)
			return slices.Equal(got, want), nil
		})
		if err != nil {
			t.Fatalf("CSRs left %v, want %v", got, want)
		}
	}
	left("denied", "issued", "young-pending")

	// The ticker exists once the first pass has deleted. An hour later
	// the next poll takes the denied and the issued ones; the pending one
	// is then 24h old, not more, and goes at the poll after.
	clk.Step(PollingInterval)
	left("young-pending")
	clk.Step(PollingInterval)
	left()
}
