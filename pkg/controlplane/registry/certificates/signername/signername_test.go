package signername

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidate(t *testing.T) {
	long := strings.Repeat("a", 63)
	longDomain := strings.Join([]string{long, long, long, long[:61]}, ".") // 253
	for _, tt := range []struct {
		name string
		errs int
		typ  field.ErrorType
	}{
		{"kubernetes.io/kube-apiserver-client", 0, ""},
		{"example.com/ns.name", 0, ""},
		{longDomain + "/" + strings.Repeat("b", 253) + "." + long, 0, ""},
		{"", 1, field.ErrorTypeRequired},
		{"example.com", 1, field.ErrorTypeInvalid},
		{"example.com/", 1, field.ErrorTypeInvalid},
		{"/signer", 2, field.ErrorTypeInvalid},
		{"Example.com/signer", 1, field.ErrorTypeInvalid},
		{"example/signer", 1, field.ErrorTypeInvalid},
		{longDomain + "x/signer", 1, field.ErrorTypeTooLong},
		{"example.com/" + strings.Repeat("b", 254), 1, field.ErrorTypeInvalid},
	} {
		errs := Validate(field.NewPath("spec", "signerName"), tt.name)
		if len(errs) != tt.errs {
			t.Errorf("%.40q: %d errors, want %d: %v", tt.name, len(errs), tt.errs, errs)
			continue
		}
		for _, e := range errs {
			if e.Field != "spec.signerName" || (tt.typ != "" && e.Type != tt.typ) {
				t.Errorf("%.40q: %v", tt.name, e)
			}
		}
	}
}
