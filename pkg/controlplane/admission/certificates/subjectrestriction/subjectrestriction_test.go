package subjectrestriction

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

func request(t *testing.T, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "x", Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		name        string
		signer      string
		request     []byte
		subresource string
		want        string
	}{
		{"masters for apiserver client", certificatesv1.KubeAPIServerClientSignerName, request(t, "devs", "system:masters"), "",
			"use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"},
		{"other group", certificatesv1.KubeAPIServerClientSignerName, request(t, "devs"), "", ""},
		{"masters for other signer", "example.com/signer", request(t, "system:masters"), "", ""},
		{"unparsable", certificatesv1.KubeAPIServerClientSignerName, []byte("junk"), "", "failed to parse CSR"},
		{"subresource ignored", certificatesv1.KubeAPIServerClientSignerName, request(t, "system:masters"), "status", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "csr"},
				Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: tt.signer, Request: tt.request},
			}
			attrs := admission.NewAttributesRecord(csr, nil, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"),
				"", "csr", certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), tt.subresource, admission.Create,
				&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}})
			err := New().Validate(context.Background(), attrs, nil)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want Forbidden %q, got %v", tt.want, err)
			}
		})
	}
}

func TestRegisterAndHandles(t *testing.T) {
	plugins := admission.NewPlugins()
	Register(plugins)
	if !slices.Contains(plugins.Registered(), PluginName) {
		t.Fatalf("%s not registered", PluginName)
	}
	if p := New(); !p.Handles(admission.Create) || p.Handles(admission.Update) {
		t.Fatal("should handle only creates")
	}
}
