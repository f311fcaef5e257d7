package clustertrustbundle

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func certPEM(t *testing.T, isCA, basicConstraints bool) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		IsCA: isCA, BasicConstraintsValid: basicConstraints,
		KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestValidate(t *testing.T) {
	ca, ca2 := certPEM(t, true, true), certPEM(t, true, true)
	tests := []struct {
		name       string
		objectName string
		signer     string
		bundle     string
		fields     []string
		msg        string
	}{
		{name: "no signer", objectName: "plain", bundle: ca},
		{name: "signer", objectName: "example.com:signer:one", signer: "example.com/signer", bundle: ca + ca2},
		{name: "no signer with colon", objectName: "a:b", bundle: ca, fields: []string{"metadata.name"}, msg: `ClusterTrustBundle without signer name must not have ":" in its name`},
		{name: "signer without prefix", objectName: "one", signer: "example.com/signer", bundle: ca,
			fields: []string{"metadata.name"}, msg: "ClusterTrustBundle for signerName example.com/signer must be named with prefix example.com:signer:"},
		{name: "signer with bad suffix", objectName: "example.com:signer:Bad_", signer: "example.com/signer", bundle: ca, fields: []string{"metadata.name"}},
		{name: "bad signer", objectName: "nodomain:one", signer: "nodomain", bundle: ca, fields: []string{"spec.signerName"}},
		{name: "empty bundle", objectName: "plain", fields: []string{"spec.trustBundle"}, msg: "at least one trust anchor must be provided"},
		{name: "not PEM", objectName: "plain", bundle: "junk", fields: []string{"spec.trustBundle"}, msg: "at least one trust anchor must be provided"},
		{name: "wrong block type", objectName: "plain", bundle: ca + string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")})),
			fields: []string{"spec.trustBundle"}, msg: "entry 1 has bad block type: PRIVATE KEY"},
		{name: "headers", objectName: "plain", bundle: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"a": "b"}, Bytes: []byte("x")})),
			fields: []string{"spec.trustBundle"}, msg: "entry 0 has PEM block headers"},
		{name: "not X.509", objectName: "plain", bundle: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("x")})),
			fields: []string{"spec.trustBundle"}, msg: "entry 0 does not parse as X.509"},
		{name: "not a CA", objectName: "plain", bundle: certPEM(t, false, true), fields: []string{"spec.trustBundle"}, msg: "entry 0 does not have the CA bit set"},
		{name: "duplicate", objectName: "plain", bundle: ca + ca2 + ca, fields: []string{"spec.trustBundle"}, msg: "duplicate trust anchor (indices [0 2])"},
		{name: "too long", objectName: "plain", bundle: strings.Repeat("x", MaxTrustBundleSize+1), fields: []string{"spec.trustBundle"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &certificatesv1.ClusterTrustBundle{
				ObjectMeta: metav1.ObjectMeta{Name: tt.objectName},
				Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: tt.signer, TrustBundle: tt.bundle},
			}
			errs := Validate(b)
			wantFields(t, errs, tt.fields...)
			if tt.msg != "" && !strings.Contains(errs.ToAggregate().Error(), tt.msg) {
				t.Fatalf("message %q does not contain %q", errs.ToAggregate().Error(), tt.msg)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := &certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "example.com:signer:one", ResourceVersion: "1"},
		Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: "stored, no longer parsable"},
	}
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	wantFields(t, ValidateUpdate(labelled, old))

	moved := old.DeepCopy()
	moved.Name = "example.com:other:one"
	moved.Spec.SignerName = "example.com/other"
	wantFields(t, ValidateUpdate(moved, old), "metadata.name", "spec.signerName")

	rebundled := old.DeepCopy()
	rebundled.Spec.TrustBundle = "junk"
	wantFields(t, ValidateUpdate(rebundled, old), "spec.trustBundle")
}

func wantFields(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("error fields %v, want %v: %v", got, want, errs)
	}
}
