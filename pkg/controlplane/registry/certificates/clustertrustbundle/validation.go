// Package clustertrustbundle serves certificates.k8s.io/v1
// ClusterTrustBundles, validated like upstream's ValidateClusterTrustBundle*.
package clustertrustbundle

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/certificates/signername"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
)

// MaxTrustBundleSize is the largest spec.trustBundle accepted, in bytes.
const MaxTrustBundleSize = 1 * 1024 * 1024

// Validate validates a new bundle.
func Validate(b *certificatesv1.ClusterTrustBundle) field.ErrorList {
	return validate(b, true)
}

// ValidateUpdate validates an update: signerName is immutable, and the
// trust bundle is parsed again only when it changes, so a change in Go's
// PEM or X.509 parsing cannot make a stored bundle unupdatable.
func ValidateUpdate(b, old *certificatesv1.ClusterTrustBundle) field.ErrorList {
	errs := validate(b, b.Spec.TrustBundle != old.Spec.TrustBundle)
	errs = append(errs, metavalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(b.Spec.SignerName, old.Spec.SignerName, field.NewPath("spec", "signerName"))...)
}

func validate(b *certificatesv1.ClusterTrustBundle, parseBundle bool) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&b.ObjectMeta, false, NameValidator(b.Spec.SignerName), field.NewPath("metadata"))
	if b.Spec.SignerName != "" {
		errs = append(errs, signername.Validate(field.NewPath("spec", "signerName"), b.Spec.SignerName)...)
	}
	if parseBundle {
		errs = append(errs, validateTrustBundle(field.NewPath("spec", "trustBundle"), b.Spec.TrustBundle)...)
	}
	return errs
}

// NameValidator returns the name rule of a bundle for signerName: without
// a signer, a DNS subdomain with no ":"; with one, the prefix
// "<signerName with / replaced by :>:" followed by a DNS subdomain.
func NameValidator(signerName string) apimachineryvalidation.ValidateNameFunc {
	return func(name string, prefix bool) []string {
		if signerName == "" {
			if strings.Contains(name, ":") {
				return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
			}
			return apimachineryvalidation.NameIsDNSSubdomain(name, prefix)
		}
		required := strings.ReplaceAll(signerName, "/", ":") + ":"
		if !strings.HasPrefix(name, required) {
			return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signerName, required)}
		}
		return apimachineryvalidation.NameIsDNSSubdomain(strings.TrimPrefix(name, required), prefix)
	}
}

// validateTrustBundle requires at most MaxTrustBundleSize bytes of
// CERTIFICATE PEM blocks, without headers, each a CA certificate with
// valid basic constraints, at least one and none twice.
func validateTrustBundle(path *field.Path, in string) field.ErrorList {
	if len(in) > MaxTrustBundleSize {
		return field.ErrorList{field.TooLong(path, "", MaxTrustBundleSize)}
	}
	var errs field.ErrorList
	seen := map[string][]int{}
	var order []string
	rest := []byte(in)
	for i := 0; ; i++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		invalid := func(msg string) {
			errs = append(errs, field.Invalid(path, "<value omitted>", fmt.Sprintf("entry %d %s", i, msg)))
		}
		if b.Type != "CERTIFICATE" {
			invalid(fmt.Sprintf("has bad block type: %v", b.Type))
			continue
		}
		if len(b.Headers) != 0 {
			invalid("has PEM block headers")
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			invalid("does not parse as X.509")
			continue
		}
		if !cert.IsCA {
			invalid("does not have the CA bit set")
			continue
		}
		if !cert.BasicConstraintsValid {
			invalid("has invalid basic constraints")
			continue
		}
		key := string(b.Bytes)
		if _, ok := seen[key]; !ok {
			order = append(order, key)
		}
		seen[key] = append(seen[key], i)
	}
	// A malformed entry makes duplicate and missing anchors moot.
	if len(errs) != 0 {
		return errs
	}
	if len(seen) == 0 {
		errs = append(errs, field.Invalid(path, "<value omitted>", "at least one trust anchor must be provided"))
	}
	for _, key := range order {
		if indices := seen[key]; len(indices) > 1 {
			errs = append(errs, field.Invalid(path, "<value omitted>", fmt.Sprintf("duplicate trust anchor (indices %v)", indices)))
		}
	}
	return errs
}
