package signing

import (
	"context"
	"slices"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// signer allows verb "sign" on signers named one of names.
func signer(names ...string) authorizer.AuthorizerFunc {
	return func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetAPIGroup() == "certificates.k8s.io" && a.GetResource() == "signers" && a.GetVerb() == "sign" && slices.Contains(names, a.GetName()) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	}
}

func attributes(subresource string, obj, old runtime.Object) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"),
		"", "csr", certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), subresource, admission.Update,
		&metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: "signer"})
}

func TestValidate(t *testing.T) {
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr"},
		Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/signer"},
	}
	issued := csr.DeepCopy()
	issued.Status.Certificate = []byte("cert")
	failed := csr.DeepCopy()
	failed.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue}}
	relabelled := csr.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}

	for _, tt := range []struct {
		name       string
		allowed    []string
		attrs      admission.Attributes
		wantDenied bool
	}{
		{"certificate allowed", []string{"example.com/signer"}, attributes("status", issued, csr), false},
		{"certificate allowed by wildcard", []string{"example.com/*"}, attributes("status", issued, csr), false},
		{"certificate denied", nil, attributes("status", issued, csr), true},
		{"condition denied", []string{"other.com/*"}, attributes("status", failed, csr), true},
		{"metadata only", nil, attributes("status", relabelled, csr), false},
		{"approval subresource ignored", nil, attributes("approval", issued, csr), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			p.SetUnconditionalAuthorizer(signer(tt.allowed...))
			err := p.Validate(context.Background(), tt.attrs, nil)
			if !tt.wantDenied {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user not permitted to sign requests with signerName "example.com/signer"`) {
				t.Fatalf("want Forbidden with upstream's message, got %v", err)
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
	p := New()
	if p.Handles(admission.Create) || !p.Handles(admission.Update) {
		t.Fatal("should handle only updates")
	}
	if err := p.ValidateInitialization(); err == nil {
		t.Fatal("initialized without an authorizer")
	}
}
