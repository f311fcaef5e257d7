package certificatesigningrequest

import (
	"context"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestPrepareForCreate(t *testing.T) {
	ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{
		Name: "alice", UID: "uid-1", Groups: []string{"devs", "system:authenticated"},
		Extra: map[string][]string{"scopes": {"a", "b"}},
	})
	csr := validCSR(t)
	csr.Spec.Username = "mallory"
	csr.Spec.UID = "forged"
	csr.Spec.Groups = []string{"system:masters"}
	csr.Spec.Extra = map[string]certificatesv1.ExtraValue{"forged": {"x"}}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition(certificatesv1.CertificateApproved, corev1.ConditionTrue)}
	csr.Status.Certificate = []byte("pre-issued")

	PrepareForCreate(ctx, csr)
	if csr.Spec.Username != "alice" || csr.Spec.UID != "uid-1" || len(csr.Spec.Groups) != 2 || csr.Spec.Groups[0] != "devs" {
		t.Fatalf("requestor not taken from the request's user: %+v", csr.Spec)
	}
	if len(csr.Spec.Extra) != 1 || len(csr.Spec.Extra["scopes"]) != 2 {
		t.Fatalf("extra: %v", csr.Spec.Extra)
	}
	if len(csr.Status.Conditions) != 0 || len(csr.Status.Certificate) != 0 {
		t.Fatalf("status not cleared: %+v", csr.Status)
	}

	anonymous := validCSR(t)
	anonymous.Spec.Username = "mallory"
	PrepareForCreate(context.Background(), anonymous)
	if anonymous.Spec.Username != "" || anonymous.Spec.Extra != nil {
		t.Fatalf("requestor without a user in context: %+v", anonymous.Spec)
	}
}

func TestPrepareApprovalUpdate(t *testing.T) {
	now := metav1.NewTime(time.Unix(1000, 0))
	old := validCSR(t)
	old.Spec.Username = "alice"
	old.Status.Certificate = []byte("stored")
	csr := old.DeepCopy()
	csr.Spec.Username = "mallory"
	csr.Spec.SignerName = "example.com/other"
	csr.Status.Certificate = []byte("sneaked")
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition(certificatesv1.CertificateApproved, corev1.ConditionTrue)}

	PrepareApprovalUpdate(csr, old, now)
	if csr.Spec.Username != "alice" || csr.Spec.SignerName != old.Spec.SignerName || string(csr.Status.Certificate) != "stored" {
		t.Fatalf("approval changed more than conditions: %+v", csr)
	}
	if len(csr.Status.Conditions) != 1 || !csr.Status.Conditions[0].LastUpdateTime.Equal(&now) || !csr.Status.Conditions[0].LastTransitionTime.Equal(&now) {
		t.Fatalf("conditions: %+v", csr.Status.Conditions)
	}
}

func TestPrepareStatusUpdate(t *testing.T) {
	earlier := metav1.NewTime(time.Unix(10, 0))
	now := metav1.NewTime(time.Unix(1000, 0))
	old := validCSR(t)
	old.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "ByAdmin",
		LastUpdateTime: earlier, LastTransitionTime: earlier,
	}, {
		Type: "Progress", Status: corev1.ConditionTrue, LastUpdateTime: earlier, LastTransitionTime: earlier,
	}}
	csr := old.DeepCopy()
	csr.Spec.Username = "mallory"
	csr.Status.Certificate = []byte("issued")
	csr.Status.Conditions[0].Reason = "Rewritten"
	csr.Status.Conditions[1] = certificatesv1.CertificateSigningRequestCondition{Type: "Progress", Status: corev1.ConditionTrue, Reason: "Again"}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue})

	PrepareStatusUpdate(csr, old, now)
	if csr.Spec.Username != old.Spec.Username {
		t.Fatal("status update changed spec")
	}
	if string(csr.Status.Certificate) != "issued" {
		t.Fatal("status update dropped the certificate")
	}
	if csr.Status.Conditions[0].Reason != "ByAdmin" {
		t.Fatalf("Approved condition not preserved: %+v", csr.Status.Conditions[0])
	}
	progress := csr.Status.Conditions[1]
	if !progress.LastUpdateTime.Equal(&now) || !progress.LastTransitionTime.Equal(&earlier) {
		t.Fatalf("unchanged type/status should keep its transition time: %+v", progress)
	}
	failed := csr.Status.Conditions[2]
	if !failed.LastUpdateTime.Equal(&now) || !failed.LastTransitionTime.Equal(&now) {
		t.Fatalf("new condition times: %+v", failed)
	}
}

func TestCondition(t *testing.T) {
	csr := validCSR(t)
	for _, tt := range []struct {
		conditions []certificatesv1.RequestConditionType
		cert       bool
		want       string
	}{
		{nil, false, "Pending"},
		{[]certificatesv1.RequestConditionType{certificatesv1.CertificateApproved}, false, "Approved"},
		{[]certificatesv1.RequestConditionType{certificatesv1.CertificateApproved}, true, "Approved,Issued"},
		{[]certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateFailed}, false, "Approved,Failed"},
		{[]certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied}, false, "Denied"},
	} {
		c := csr.DeepCopy()
		for _, typ := range tt.conditions {
			c.Status.Conditions = append(c.Status.Conditions, condition(typ, corev1.ConditionTrue))
		}
		if tt.cert {
			c.Status.Certificate = []byte("x")
		}
		if got := Condition(c); got != tt.want {
			t.Errorf("%v cert=%v: %q, want %q", tt.conditions, tt.cert, got, tt.want)
		}
	}
}
