// Package signername validates the signerName of certificates.k8s.io
// objects (CertificateSigningRequests, ClusterTrustBundles) like upstream's
// core validation ValidateSignerName.
package signername

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks that name has the form "example.com/signer-name": a
// domain of at least two DNS-1123 labels, one "/", and a path of
// DNS-1123 subdomains separated by dots, at most 571 characters in all
// (room for "<fqdn>/<namespace>.<name>").
func Validate(fldPath *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	domain, path, found := strings.Cut(name, "/")
	if !found || strings.Contains(path, "/") {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}

	var errs field.ErrorList
	maxDomain := validation.DNS1123SubdomainMaxLength
	if len(domain) > maxDomain {
		errs = append(errs, field.TooLong(fldPath, "", maxDomain))
	}
	domainLabels := strings.Split(domain, ".")
	for _, label := range domainLabels {
		msgs := validation.IsDNS1123Label(label)
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(fldPath, domain, fmt.Sprintf("validating label %q: %s", label, msg)))
		}
		if len(msgs) > 0 {
			// Further labels would only repeat the same complaint.
			break
		}
	}
	if len(domainLabels) < 2 {
		errs = append(errs, field.Invalid(fldPath, domain, "should be a domain with at least two segments separated by dots"))
	}
	for _, label := range strings.Split(path, ".") {
		msgs := validation.IsDNS1123Subdomain(label)
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(fldPath, path, fmt.Sprintf("validating label %q: %s", label, msg)))
		}
		if len(msgs) > 0 {
			break
		}
	}
	maxPath := validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 1
	if maxName := maxDomain + maxPath + 1; len(name) > maxName {
		errs = append(errs, field.TooLong(fldPath, "", maxName))
	}
	return errs
}
