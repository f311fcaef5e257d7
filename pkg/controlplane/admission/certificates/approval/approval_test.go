package approval

import (
	"context"
	"slices"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// approver allows verb "approve" on signers named one of names.
func approver(names ...string) authorizer.AuthorizerFunc {
	return func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetAPIGroup() == "certificates.k8s.io" && a.GetResource() == "signers" && a.GetVerb() == "approve" && slices.Contains(names, a.GetName()) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	}
}

func attributes(resource, subresource string, op admission.Operation, obj, old runtime.Object) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"),
		"", "csr", certificatesv1.SchemeGroupVersion.WithResource(resource), subresource, op, &metav1.UpdateOptions{}, false,
		&user.DefaultInfo{Name: "alice"})
}

func TestValidate(t *testing.T) {
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr"},
		Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/signer"},
	}
	// The new object names another signer: the stored one's counts.
	moved := csr.DeepCopy()
	moved.Spec.SignerName = "example.com/allowed"

	for _, tt := range []struct {
		name       string
		allowed    []string
		attrs      admission.Attributes
		wantDenied bool
	}{
		{"allowed by name", []string{"example.com/signer"}, attributes("certificatesigningrequests", "approval", admission.Update, moved, csr), false},
		{"allowed by domain wildcard", []string{"example.com/*"}, attributes("certificatesigningrequests", "approval", admission.Update, moved, csr), false},
		{"denied", []string{"example.com/allowed", "kubernetes.io/*"}, attributes("certificatesigningrequests", "approval", admission.Update, moved, csr), true},
		{"status subresource ignored", nil, attributes("certificatesigningrequests", "status", admission.Update, csr, csr), false},
		{"main resource ignored", nil, attributes("certificatesigningrequests", "", admission.Update, csr, csr), false},
		{"other resource ignored", nil, attributes("clustertrustbundles", "approval", admission.Update, csr, csr), false},
		{"wrong old type", nil, attributes("certificatesigningrequests", "approval", admission.Update, csr, &certificatesv1.ClusterTrustBundle{}), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			p.SetUnconditionalAuthorizer(approver(tt.allowed...))
			if err := p.ValidateInitialization(); err != nil {
				t.Fatal(err)
			}
			err := p.Validate(context.Background(), tt.attrs, nil)
			if !tt.wantDenied {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("want Forbidden, got %v", err)
			}
			if tt.name == "denied" && !strings.Contains(err.Error(), `user not permitted to approve requests with signerName "example.com/signer"`) {
				t.Fatalf("message: %v", err)
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
