package secret

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func secret(typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", ResourceVersion: "1"}, Type: typ, Data: data}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		s    *corev1.Secret
		want string // the one field path expected in error, "" for valid
	}{
		{"opaque", secret(corev1.SecretTypeOpaque, map[string][]byte{"k": nil}), ""},
		{"bad key", secret(corev1.SecretTypeOpaque, map[string][]byte{"a b": nil}), "data[a b]"},
		{"tls without key", secret(corev1.SecretTypeTLS, map[string][]byte{"tls.crt": nil}), "data[tls.key]"},
		{"dockerconfigjson invalid", secret(corev1.SecretTypeDockerConfigJson, map[string][]byte{".dockerconfigjson": []byte("{")}), "data[.dockerconfigjson]"},
		{"ssh without key", secret(corev1.SecretTypeSSHAuth, nil), "data[ssh-privatekey]"},
		{"sa token without annotation", secret(corev1.SecretTypeServiceAccountToken, nil), "metadata.annotations[kubernetes.io/service-account.name]"},
		{"custom type", secret("example.com/thing", nil), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := Validate(c.s)
			if c.want == "" && len(errs) != 0 || c.want != "" && (len(errs) != 1 || errs[0].Field != c.want) {
				t.Fatalf("errors %v, want one at %q", errs, c.want)
			}
		})
	}
}

func TestTypeIsImmutable(t *testing.T) {
	old := secret(corev1.SecretTypeOpaque, nil)
	changed := secret("example.com/other", nil)
	errs := ValidateUpdate(changed, old)
	if len(errs) != 1 || errs[0].Field != "type" || errs[0].Type != field.ErrorTypeInvalid {
		t.Fatalf("errors %v, want type immutable", errs)
	}
}

func TestDefaultsAndStringData(t *testing.T) {
	s := &corev1.Secret{StringData: map[string]string{"u": "x"}, Data: map[string][]byte{"p": []byte("y")}}
	SetDefaults(s)
	mergeStringData(s)
	if s.Type != corev1.SecretTypeOpaque || string(s.Data["u"]) != "x" || string(s.Data["p"]) != "y" || s.StringData != nil {
		t.Fatalf("got %+v", s)
	}
}
