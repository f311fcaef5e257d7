// Package certificatesigningrequest serves certificates.k8s.io/v1
// CertificateSigningRequests with their approval and status subresources,
// validated like upstream's ValidateCertificateSigningRequest*.
package certificatesigningrequest

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/certificates/signername"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
)

// LegacyUnknownSignerName is the signerName v1beta1 defaulted to; the v1
// API refuses it on new requests.
const LegacyUnknownSignerName = "kubernetes.io/legacy-unknown"

// minExpirationSeconds is the shortest duration a request may ask for.
const minExpirationSeconds = 600

// validUsages are the key usages a request may list.
var validUsages = sets.New(
	certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
	certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
	certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
	certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
	certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
	certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
	certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
)

// trueOnlyConditions are the condition types whose status may only be True.
var trueOnlyConditions = sets.New(certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed)

// options says which changes the path of a request allows, and which
// defects an update tolerates because the stored object already has them.
type options struct {
	// allowApprovalConditions lets the update add Approved or Denied
	// conditions (the approval subresource).
	allowApprovalConditions bool
	// allowCertificate lets the update set status.certificate (the status
	// subresource).
	allowCertificate bool

	allowBothApprovedAndDenied   bool
	allowLegacySignerName        bool
	allowDuplicateConditionTypes bool
	allowEmptyConditionType      bool
	allowArbitraryCertificate    bool
	allowUnknownUsages           bool
	allowDuplicateUsages         bool
}

// optionsFor returns the tolerances of a create (old nil) or an update.
func optionsFor(csr, old *certificatesv1.CertificateSigningRequest) options {
	if old == nil {
		return options{}
	}
	approved, denied := false, false
	for _, c := range old.Status.Conditions {
		approved = approved || c.Type == certificatesv1.CertificateApproved
		denied = denied || c.Type == certificatesv1.CertificateDenied
	}
	return options{
		allowBothApprovedAndDenied:   approved && denied,
		allowLegacySignerName:        old.Spec.SignerName == LegacyUnknownSignerName,
		allowDuplicateConditionTypes: hasDuplicateConditionTypes(old),
		allowEmptyConditionType:      hasEmptyConditionType(old),
		allowArbitraryCertificate: bytes.Equal(csr.Status.Certificate, old.Status.Certificate) ||
			validateCertificate(old.Status.Certificate) != nil,
		allowUnknownUsages:   hasUnknownUsage(old.Spec.Usages),
		allowDuplicateUsages: hasDuplicateUsage(old.Spec.Usages),
	}
}

// Validate validates a new request.
func Validate(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validate(csr, optionsFor(csr, nil))
}

// ValidateUpdate validates an update of the main resource: neither the
// approval conditions nor the certificate may change.
func ValidateUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateUpdate(csr, old, optionsFor(csr, old))
}

// ValidateStatusUpdate validates an update through the status
// subresource, which may set the certificate once.
func ValidateStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	opts := optionsFor(csr, old)
	opts.allowCertificate = true
	return validateUpdate(csr, old, opts)
}

// ValidateApprovalUpdate validates an update through the approval
// subresource, which may add Approved or Denied conditions.
func ValidateApprovalUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	opts := optionsFor(csr, old)
	opts.allowApprovalConditions = true
	return validateUpdate(csr, old, opts)
}

// ParseRequest decodes a PEM "CERTIFICATE REQUEST" block and parses the
// PKCS#10 request in it.
func ParseRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// validateRequest parses the request and checks its signature.
func validateRequest(pemBytes []byte) error {
	req, err := ParseRequest(pemBytes)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

// validateCertificate accepts empty data or one or more CERTIFICATE PEM
// blocks, without headers, that parse as X.509.
func validateCertificate(pemData []byte) error {
	if len(pemData) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(pemData)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		pemData = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// validName accepts any name: upstream does not restrict what requests
// are called (the apiserver still refuses names unusable in a path).
func validName(string, bool) []string { return nil }

func validate(csr *certificatesv1.CertificateSigningRequest, opts options) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&csr.ObjectMeta, false, validName, field.NewPath("metadata"))

	spec := field.NewPath("spec")
	if err := validateRequest(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	if !opts.allowUnknownUsages {
		for i, usage := range csr.Spec.Usages {
			if !validUsages.Has(usage) {
				errs = append(errs, field.NotSupported(spec.Child("usages").Index(i), usage, sets.List(validUsages)))
			}
		}
	}
	if !opts.allowDuplicateUsages {
		seen := sets.New[certificatesv1.KeyUsage]()
		for i, usage := range csr.Spec.Usages {
			if seen.Has(usage) {
				errs = append(errs, field.Duplicate(spec.Child("usages").Index(i), usage))
			}
			seen.Insert(usage)
		}
	}
	if !opts.allowLegacySignerName && csr.Spec.SignerName == LegacyUnknownSignerName {
		errs = append(errs, field.Invalid(spec.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, signername.Validate(spec.Child("signerName"), csr.Spec.SignerName)...)
	}
	if csr.Spec.ExpirationSeconds != nil && *csr.Spec.ExpirationSeconds < minExpirationSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *csr.Spec.ExpirationSeconds, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateConditions(field.NewPath("status", "conditions"), csr.Status.Conditions, opts)...)
	if !opts.allowArbitraryCertificate {
		if err := validateCertificate(csr.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	return errs
}

func validateConditions(fldPath *field.Path, conditions []certificatesv1.CertificateSigningRequestCondition, opts options) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[certificatesv1.RequestConditionType]()
	approved, denied := false, false
	for i, c := range conditions {
		path := fldPath.Index(i)
		if !opts.allowEmptyConditionType && c.Type == "" {
			errs = append(errs, field.Required(path.Child("type"), ""))
		}
		allowed := sets.New(corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown)
		if trueOnlyConditions.Has(c.Type) {
			allowed = sets.New(corev1.ConditionTrue)
		}
		switch {
		case c.Status == "":
			errs = append(errs, field.Required(path.Child("status"), ""))
		case !allowed.Has(c.Status):
			errs = append(errs, field.NotSupported(path.Child("status"), c.Status, sets.List(allowed)))
		}
		if !opts.allowBothApprovedAndDenied {
			switch c.Type {
			case certificatesv1.CertificateApproved:
				approved = true
				if denied {
					errs = append(errs, field.Invalid(fldPath, c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			case certificatesv1.CertificateDenied:
				denied = true
				if approved {
					errs = append(errs, field.Invalid(fldPath, c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			}
		}
		if !opts.allowDuplicateConditionTypes {
			if seen.Has(c.Type) {
				errs = append(errs, field.Duplicate(path.Child("type"), c.Type))
			}
			seen.Insert(c.Type)
		}
	}
	return errs
}

func validateUpdate(csr, old *certificatesv1.CertificateSigningRequest, opts options) field.ErrorList {
	errs := validate(csr, opts)
	conditionsPath := field.NewPath("status", "conditions")

	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(findConditions(csr, t)) < len(findConditions(old, t)) {
			errs = append(errs, field.Forbidden(conditionsPath, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !opts.allowApprovalConditions {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			oldConditions, newConditions := findConditions(old, t), findConditions(csr, t)
			switch {
			case len(newConditions) < len(oldConditions):
				// Reported above.
			case len(newConditions) > len(oldConditions):
				errs = append(errs, field.Forbidden(conditionsPath, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !apiequality.Semantic.DeepEqual(oldConditions, newConditions):
				errs = append(errs, field.Forbidden(conditionsPath, fmt.Sprintf("updates may not modify a condition of type %q\n%v", t, diff.Diff(oldConditions, newConditions))))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		certificatePath := field.NewPath("status", "certificate")
		if !opts.allowCertificate {
			errs = append(errs, field.Forbidden(certificatePath, "updates may not set certificate content"))
		} else if len(old.Status.Certificate) > 0 {
			errs = append(errs, field.Forbidden(certificatePath, "updates may not modify existing certificate content"))
		}
	}
	return append(errs, metavalidation.ValidateObjectMetaUpdate(&csr.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
}

// findConditions returns the conditions of type t.
func findConditions(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var found []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			found = append(found, c)
		}
	}
	return found
}

func hasDuplicateConditionTypes(csr *certificatesv1.CertificateSigningRequest) bool {
	seen := sets.New[certificatesv1.RequestConditionType]()
	for _, c := range csr.Status.Conditions {
		if seen.Has(c.Type) {
			return true
		}
		seen.Insert(c.Type)
	}
	return false
}

func hasEmptyConditionType(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == "" {
			return true
		}
	}
	return false
}

func hasUnknownUsage(usages []certificatesv1.KeyUsage) bool {
	for _, u := range usages {
		if !validUsages.Has(u) {
			return true
		}
	}
	return false
}

func hasDuplicateUsage(usages []certificatesv1.KeyUsage) bool {
	return sets.New(usages...).Len() != len(usages)
}
