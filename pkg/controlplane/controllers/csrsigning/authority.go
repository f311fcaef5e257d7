package csrsigning

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Lifetimes of issued certificates, upstream's.
const (
	// Backdate is how far before now a certificate's NotBefore is set,
	// so that clocks a little behind the signer's accept it at once.
	Backdate = 5 * time.Minute
	// Short is the lifetime below which NotAfter is not backdated too
	// (5 minutes is about 1% of 8 hours).
	Short = 8 * time.Hour
	// MinDuration is the shortest lifetime given, whatever
	// spec.expirationSeconds asks: twice Backdate.
	MinDuration = 10 * time.Minute
)

// Authority is a CA certificate and its private key.
type Authority struct {
	// Certificate is the CA certificate.
	Certificate *x509.Certificate
	// Key is the CA's private key.
	Key crypto.Signer
}

// ParseAuthority reads a CA from its PEM certificate (exactly one) and
// PEM private key (RSA or ECDSA).
func ParseAuthority(certPEM, keyPEM []byte) (*Authority, error) {
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if len(certs) != 1 {
		return nil, fmt.Errorf("CA certificate: expected 1 certificate, found %d", len(certs))
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("CA key: key did not implement crypto.Signer")
	}
	return &Authority{Certificate: certs[0], Key: signer}, nil
}

// Duration is the lifetime of a certificate for a CSR that asks for
// expirationSeconds (nil: not asked) under a signer whose longest lifetime
// is max: the request, capped by max and raised to MinDuration.
func Duration(expirationSeconds *int32, max time.Duration) time.Duration {
	if expirationSeconds == nil {
		return max
	}
	switch requested := time.Duration(*expirationSeconds) * time.Second; {
	case requested > max:
		return max
	case requested < MinDuration:
		return MinDuration
	default:
		return requested
	}
}

// Sign issues a PEM certificate for the PEM-decoded request req, valid
// from now-Backdate for ttl (less Backdate when ttl is at least Short),
// never beyond the CA's own NotAfter, with the key usages usages. As
// upstream's local signer, the subject and the subject alternative names
// come from the request, and the request's extensions are dropped.
func (a *Authority) Sign(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, ttl time.Duration, now time.Time) ([]byte, error) {
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("unable to verify certificate request signature: %v", err)
	}
	keyUsage, extKeyUsage, err := keyUsages(usages)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("unable to generate a serial number for %s: %v", req.Subject.CommonName, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               req.Subject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		PublicKeyAlgorithm:    req.PublicKeyAlgorithm,
		PublicKey:             req.PublicKey,
		KeyUsage:              keyUsage,
		ExtKeyUsage:           extKeyUsage,
		BasicConstraintsValid: true,
		IsCA:                  false,
		NotBefore:             now.Add(-Backdate),
	}
	if ttl < Short {
		tmpl.NotAfter = now.Add(ttl)
	} else {
		tmpl.NotAfter = now.Add(ttl - Backdate)
	}
	caNotAfter := a.Certificate.NotAfter
	if !tmpl.NotAfter.Before(caNotAfter) {
		tmpl.NotAfter = caNotAfter
	}
	if !tmpl.NotBefore.Before(caNotAfter) {
		return nil, fmt.Errorf("the signer has expired: NotAfter=%v", caNotAfter)
	}
	if !now.Before(caNotAfter) {
		return nil, fmt.Errorf("refusing to sign a certificate that expired in the past: NotAfter=%v", caNotAfter)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Certificate, req.PublicKey, a.Key)
	if err != nil {
		return nil, fmt.Errorf("failed to sign certificate: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: der}), nil
}

var keyUsageOf = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
	certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
	certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
	certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
	certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
	certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
	certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
	certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
	certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
	certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
}

var extKeyUsageOf = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
	certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
	certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
	certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
	certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
	certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

// keyUsages translates the API's usages into X.509 key usages and sorted,
// distinct extended key usages.
func keyUsages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var ku x509.KeyUsage
	var ext []x509.ExtKeyUsage
	var unrecognized []certificatesv1.KeyUsage
	for _, u := range usages {
		if v, ok := keyUsageOf[u]; ok {
			ku |= v
		} else if v, ok := extKeyUsageOf[u]; ok {
			ext = append(ext, v)
		} else {
			unrecognized = append(unrecognized, u)
		}
	}
	if len(unrecognized) > 0 {
		return 0, nil, fmt.Errorf("unrecognized usage values: %q", unrecognized)
	}
	slices.Sort(ext)
	return ku, slices.Compact(ext), nil
}
