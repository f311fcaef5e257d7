package certificatesigningrequest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func requestDER(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "me"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func requestPEM(t *testing.T) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: requestDER(t)})
}

func certificatePEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func validCSR(t *testing.T) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    requestPEM(t),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature},
		},
	}
}

func condition(t certificatesv1.RequestConditionType, status corev1.ConditionStatus) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: status}
}

// wantFields fails unless errs has exactly one error per field in want
// (in any order), each of the given type when typ is not empty.
func wantFields(t *testing.T, errs field.ErrorList, typ field.ErrorType, want ...string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
		if typ != "" && e.Type != typ {
			t.Errorf("%s: type %s, want %s (%v)", e.Field, e.Type, typ, e)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("error fields %v, want %v: %v", got, want, errs)
	}
}

func TestValidateCreate(t *testing.T) {
	badSignature := requestDER(t)
	badSignature[len(badSignature)-1] ^= 0xff
	tests := []struct {
		name   string
		mutate func(*certificatesv1.CertificateSigningRequest)
		typ    field.ErrorType
		fields []string
		msg    string
	}{
		{name: "valid", mutate: func(*certificatesv1.CertificateSigningRequest) {}},
		{name: "valid custom signer, expiration and status conditions", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = "example.com/my-signer.v1"
			c.Spec.ExpirationSeconds = ptr.To[int32](600)
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition("Custom", corev1.ConditionFalse)}
		}},
		{name: "not PEM", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("junk") },
			typ: field.ErrorTypeInvalid, fields: []string{"spec.request"}, msg: "PEM block type must be CERTIFICATE REQUEST"},
		{name: "wrong block type", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: requestDER(t)})
		}, typ: field.ErrorTypeInvalid, fields: []string{"spec.request"}, msg: "PEM block type must be CERTIFICATE REQUEST"},
		{name: "unparsable request", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte("nope")})
		}, typ: field.ErrorTypeInvalid, fields: []string{"spec.request"}},
		{name: "bad signature", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: badSignature})
		}, typ: field.ErrorTypeInvalid, fields: []string{"spec.request"}},
		{name: "no usages", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil },
			typ: field.ErrorTypeRequired, fields: []string{"spec.usages"}},
		{name: "unknown usage", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = append(c.Spec.Usages, "bogus") },
			typ: field.ErrorTypeNotSupported, fields: []string{"spec.usages[2]"}},
		{name: "duplicate usage", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageClientAuth)
		}, typ: field.ErrorTypeDuplicate, fields: []string{"spec.usages[2]"}},
		{name: "no signer", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" },
			typ: field.ErrorTypeRequired, fields: []string{"spec.signerName"}},
		{name: "legacy signer", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = LegacyUnknownSignerName },
			typ: field.ErrorTypeInvalid, fields: []string{"spec.signerName"}, msg: "the legacy signerName is not allowed via this API version"},
		{name: "signer without path", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com" },
			typ: field.ErrorTypeInvalid, fields: []string{"spec.signerName"}, msg: "must be a fully qualified domain and path of the form 'example.com/signer-name'"},
		{name: "signer with two slashes", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com/a/b" },
			typ: field.ErrorTypeInvalid, fields: []string{"spec.signerName"}},
		{name: "signer domain of one label", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example/signer" },
			typ: field.ErrorTypeInvalid, fields: []string{"spec.signerName"}, msg: "should be a domain with at least two segments separated by dots"},
		{name: "signer path not a DNS name", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com/Not_Valid" },
			typ: field.ErrorTypeInvalid, fields: []string{"spec.signerName"}, msg: `validating label "Not_Valid"`},
		{name: "short expiration", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptr.To[int32](599) },
			typ: field.ErrorTypeInvalid, fields: []string{"spec.expirationSeconds"}, msg: "may not specify a duration less than 600 seconds (10 minutes)"},
		{name: "approved and denied", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
				condition(certificatesv1.CertificateApproved, corev1.ConditionTrue), condition(certificatesv1.CertificateDenied, corev1.ConditionTrue)}
		}, typ: field.ErrorTypeInvalid, fields: []string{"status.conditions"}, msg: "Approved and Denied conditions are mutually exclusive"},
		{name: "approved false", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition(certificatesv1.CertificateApproved, corev1.ConditionFalse)}
		}, typ: field.ErrorTypeNotSupported, fields: []string{"status.conditions[0].status"}},
		{name: "condition without type or status", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{}}
		}, typ: field.ErrorTypeRequired, fields: []string{"status.conditions[0].type", "status.conditions[0].status"}},
		{name: "custom condition with bad status", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition("Custom", "Maybe")}
		}, typ: field.ErrorTypeNotSupported, fields: []string{"status.conditions[0].status"}},
		{name: "duplicate condition", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
				condition(certificatesv1.CertificateFailed, corev1.ConditionTrue), condition(certificatesv1.CertificateFailed, corev1.ConditionTrue)}
		}, typ: field.ErrorTypeDuplicate, fields: []string{"status.conditions[1].type"}},
		{name: "certificate not PEM", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = []byte("junk") },
			typ: field.ErrorTypeInvalid, fields: []string{"status.certificate"}, msg: "must contain at least one CERTIFICATE PEM block"},
		{name: "certificate of wrong block type", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = requestPEM(t) },
			typ: field.ErrorTypeInvalid, fields: []string{"status.certificate"}, msg: `only CERTIFICATE PEM blocks are allowed, found "CERTIFICATE REQUEST"`},
		{name: "valid certificate chain", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Certificate = append(certificatePEM(t), certificatePEM(t)...)
		}},
		{name: "bad metadata", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Namespace = "default" },
			typ: field.ErrorTypeForbidden, fields: []string{"metadata.namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := validCSR(t)
			tt.mutate(csr)
			errs := Validate(csr)
			wantFields(t, errs, tt.typ, tt.fields...)
			if tt.msg != "" && !strings.Contains(errs.ToAggregate().Error(), tt.msg) {
				t.Fatalf("message %q does not contain %q", errs.ToAggregate().Error(), tt.msg)
			}
		})
	}
}

func TestValidateUpdates(t *testing.T) {
	base := validCSR(t)
	base.ResourceVersion = "1"
	approved := base.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition(certificatesv1.CertificateApproved, corev1.ConditionTrue)}
	issued := approved.DeepCopy()
	issued.Status.Certificate = certificatePEM(t)
	reissued := issued.DeepCopy()
	reissued.Status.Certificate = certificatePEM(t)
	failed := approved.DeepCopy()
	failed.Status.Conditions = append(failed.Status.Conditions, condition(certificatesv1.CertificateFailed, corev1.ConditionTrue))
	modified := approved.DeepCopy()
	modified.Status.Conditions[0].Reason = "changed"

	type validateFn func(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList
	tests := []struct {
		name     string
		validate validateFn
		old, csr *certificatesv1.CertificateSigningRequest
		fields   []string
		msg      string
	}{
		{"main: unchanged", ValidateUpdate, base, base, nil, ""},
		{"main: cannot approve", ValidateUpdate, base, approved, []string{"status.conditions"}, `updates may not add a condition of type "Approved"`},
		{"main: cannot set certificate", ValidateUpdate, approved, issued, []string{"status.certificate"}, "updates may not set certificate content"},
		{"approval: approve", ValidateApprovalUpdate, base, approved, nil, ""},
		{"approval: cannot unapprove", ValidateApprovalUpdate, approved, base, []string{"status.conditions"}, `updates may not remove a condition of type "Approved"`},
		{"approval: cannot set certificate", ValidateApprovalUpdate, approved, issued, []string{"status.certificate"}, "updates may not set certificate content"},
		{"status: set certificate", ValidateStatusUpdate, approved, issued, nil, ""},
		{"status: cannot replace certificate", ValidateStatusUpdate, issued, reissued, []string{"status.certificate"}, "updates may not modify existing certificate content"},
		{"status: add Failed", ValidateStatusUpdate, approved, failed, nil, ""},
		{"status: cannot remove Failed", ValidateStatusUpdate, failed, approved, []string{"status.conditions"}, `updates may not remove a condition of type "Failed"`},
		{"status: cannot approve", ValidateStatusUpdate, base, approved, []string{"status.conditions"}, `updates may not add a condition of type "Approved"`},
		{"status: cannot modify approval", ValidateStatusUpdate, approved, modified, []string{"status.conditions"}, `updates may not modify a condition of type "Approved"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.validate(tt.csr.DeepCopy(), tt.old.DeepCopy())
			wantFields(t, errs, "", tt.fields...)
			if tt.msg != "" && !strings.Contains(errs.ToAggregate().Error(), tt.msg) {
				t.Fatalf("message %q does not contain %q", errs.ToAggregate().Error(), tt.msg)
			}
		})
	}
}

// TestValidateUpdateToleratesStoredDefects checks that an update is not
// refused for defects the stored object already has.
func TestValidateUpdateToleratesStoredDefects(t *testing.T) {
	old := validCSR(t)
	old.ResourceVersion = "1"
	old.Spec.SignerName = LegacyUnknownSignerName
	old.Spec.Usages = []certificatesv1.KeyUsage{"bogus", "bogus"}
	old.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
		condition(certificatesv1.CertificateApproved, corev1.ConditionTrue),
		condition(certificatesv1.CertificateDenied, corev1.ConditionTrue),
		condition("", corev1.ConditionTrue),
		condition("", corev1.ConditionTrue),
	}
	old.Status.Certificate = []byte("junk")
	csr := old.DeepCopy()
	csr.Labels = map[string]string{"a": "b"}
	if errs := ValidateUpdate(csr, old); len(errs) != 0 {
		t.Fatalf("update refused for stored defects: %v", errs)
	}
}
