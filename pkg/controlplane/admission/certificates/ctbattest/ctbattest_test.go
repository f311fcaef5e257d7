package ctbattest

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

// attester allows verb "attest" on signers named one of names.
func attester(names ...string) authorizer.AuthorizerFunc {
	return func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetAPIGroup() == "certificates.k8s.io" && a.GetResource() == "signers" && a.GetVerb() == "attest" && slices.Contains(names, a.GetName()) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	}
}

func attributes(resource string, op admission.Operation, obj, old runtime.Object) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"),
		"", "bundle", certificatesv1.SchemeGroupVersion.WithResource(resource), "", op,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "bob"})
}

func TestValidate(t *testing.T) {
	bundle := &certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "example.com:signer:b"},
		Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: "old"},
	}
	plain := &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	rebundled := bundle.DeepCopy()
	rebundled.Spec.TrustBundle = "new"
	owned := bundle.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "u"}}
	owned.Finalizers = []string{"example.com/f"}

	for _, tt := range []struct {
		name       string
		allowed    []string
		attrs      admission.Attributes
		wantDenied bool
	}{
		{"create allowed", []string{"example.com/signer"}, attributes("clustertrustbundles", admission.Create, bundle, nil), false},
		{"create allowed by wildcard", []string{"example.com/*"}, attributes("clustertrustbundles", admission.Create, bundle, nil), false},
		{"create denied", nil, attributes("clustertrustbundles", admission.Create, bundle, nil), true},
		{"update denied", []string{"other.com/*"}, attributes("clustertrustbundles", admission.Update, rebundled, bundle), true},
		{"no signer", nil, attributes("clustertrustbundles", admission.Create, plain, nil), false},
		{"GC fields only", nil, attributes("clustertrustbundles", admission.Update, owned, bundle), false},
		{"other resource ignored", nil, attributes("certificatesigningrequests", admission.Create, &certificatesv1.CertificateSigningRequest{}, nil), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			p.SetUnconditionalAuthorizer(attester(tt.allowed...))
			err := p.Validate(context.Background(), tt.attrs, nil)
			if !tt.wantDenied {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user not permitted to attest for signerName "example.com/signer"`) {
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
	if !p.Handles(admission.Create) || !p.Handles(admission.Update) || p.Handles(admission.Delete) {
		t.Fatal("should handle creates and updates")
	}
	if err := p.ValidateInitialization(); err == nil {
		t.Fatal("initialized without an authorizer")
	}
}
