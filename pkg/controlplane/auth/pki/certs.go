package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// backdate moves NotBefore into the past so that a certificate is accepted
// at once by a process whose clock is slightly behind.
const backdate = 5 * time.Minute

var (
	serverUsages       = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	clientUsages       = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	serverClientUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
)

// authority is a CA certificate with its private key.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// leafSpec is what a certificate signed by an authority must say.
type leafSpec struct {
	certFile, keyFile string
	commonName        string
	organization      []string
	usages            []x509.ExtKeyUsage
	dnsNames          []string
	ips               []net.IP
}

// ensureCA loads the CA in certFile and keyFile, or creates it when both are
// missing. When only the key exists (a crash between the two writes, or a
// deleted certificate) the certificate is self-signed again with that key,
// which keeps every issued certificate valid. Anything else unreadable is an
// error: a new CA would lock out everyone holding a certificate from the old.
func ensureCA(w writer, certFile, keyFile, commonName string, now time.Time) (*authority, error) {
	haveCert, err := exists(certFile)
	if err != nil {
		return nil, err
	}
	haveKey, err := exists(keyFile)
	if err != nil {
		return nil, err
	}
	var ca *authority
	switch {
	case haveCert && haveKey:
		if ca, err = loadCA(certFile, keyFile); err != nil {
			return nil, err
		}
	case haveCert:
		return nil, fmt.Errorf("%s exists but its key %s is missing; %s", certFile, keyFile, keepCAAdvice(certFile))
	default:
		var key crypto.Signer
		if haveKey {
			if key, err = readPrivateKey(keyFile); err != nil {
				return nil, fmt.Errorf("%w; %s", err, keepCAAdvice(keyFile))
			}
		} else {
			if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
				return nil, err
			}
			keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
			if err != nil {
				return nil, err
			}
			if err := w.write(keyFile, keyPEM, 0o600); err != nil {
				return nil, err
			}
		}
		if ca, err = selfSign(commonName, key, now); err != nil {
			return nil, err
		}
		if err := w.write(certFile, encodeCert(ca.cert.Raw), 0o644); err != nil {
			return nil, err
		}
	}
	if !now.Before(ca.cert.NotAfter) {
		return nil, fmt.Errorf("CA certificate %s expired at %s, and every certificate it signed with it; a new CA needs every certificate and kubeconfig replaced: move %s aside (keep it until the new one works) and create a new PKI",
			certFile, ca.cert.NotAfter.Format(time.RFC3339), filepath.Dir(certFile))
	}
	return ca, nil
}

// keepCAAdvice explains why a broken CA is not replaced and what to do.
func keepCAAdvice(file string) string {
	return fmt.Sprintf("refusing to create a new CA, which would invalidate every certificate and kubeconfig signed by the current one: restore %s from a backup",
		file)
}

// loadCA reads a CA certificate and its key and checks that they belong
// together and can sign.
func loadCA(certFile, keyFile string) (*authority, error) {
	cert, err := readCert(certFile)
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, keepCAAdvice(certFile))
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("%s is not a CA certificate", certFile)
	}
	key, err := readPrivateKey(keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, keepCAAdvice(keyFile))
	}
	if !publicKeysEqual(key.Public(), cert.PublicKey) {
		return nil, fmt.Errorf("key %s does not belong to certificate %s; %s", keyFile, certFile, keepCAAdvice(keyFile))
	}
	return &authority{cert: cert, key: key}, nil
}

// selfSign makes a CA certificate for key. Its subject key ID is derived
// from the key alone, so re-signing the same key yields a CA that certificates
// issued earlier still chain to, whatever the Go version.
func selfSign(commonName string, key crypto.Signer, now time.Time) (*authority, error) {
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	skid, err := keyID(key.Public())
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate).UTC(),
		NotAfter:              now.Add(caValidity).UTC(),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SubjectKeyId:          skid,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key}, nil
}

// ensureLeaf keeps the certificate in spec's files when it still fits spec,
// ca and the key, and issues a new one otherwise, for the key already there
// (a key is generated only when there is none). A file that exists but does
// not parse is an error rather than silently replaced, since atomic writes
// mean it was damaged by something other than gcp.
func ensureLeaf(w writer, ca *authority, spec leafSpec, now time.Time) error {
	haveCert, err := exists(spec.certFile)
	if err != nil {
		return err
	}
	haveKey, err := exists(spec.keyFile)
	if err != nil {
		return err
	}
	var key crypto.Signer
	if haveKey {
		if key, err = readPrivateKey(spec.keyFile); err != nil {
			return fmt.Errorf("%w; remove %s and %s to have them re-issued", err, spec.certFile, spec.keyFile)
		}
		if haveCert {
			cert, err := readCert(spec.certFile)
			if err != nil {
				return fmt.Errorf("%w; remove %s to have it re-issued", err, spec.certFile)
			}
			// A certificate for another key is what a crash between
			// writing a new key and its certificate leaves behind.
			if publicKeysEqual(key.Public(), cert.PublicKey) && ca.stillFits(cert, spec, now) {
				return nil
			}
		}
	} else {
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return err
		}
		keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
		if err != nil {
			return err
		}
		if err := w.write(spec.keyFile, keyPEM, 0o600); err != nil {
			return err
		}
	}
	certPEM, err := ca.sign(spec, key.Public(), leafValidity, now)
	if err != nil {
		return err
	}
	return w.write(spec.certFile, certPEM, 0o644)
}

// stillFits reports whether cert was signed by ca, is valid for at least
// renewBefore more, and carries spec's subject, usages and SANs (it may carry
// more SANs: one dropped from --tls-san is not a reason to re-issue).
func (ca *authority) stillFits(cert *x509.Certificate, spec leafSpec, now time.Time) bool {
	if !bytes.Equal(cert.RawIssuer, ca.cert.RawSubject) || cert.CheckSignatureFrom(ca.cert) != nil {
		return false
	}
	if now.Before(cert.NotBefore) || !now.Add(renewBefore).Before(cert.NotAfter) {
		return false
	}
	if cert.Subject.CommonName != spec.commonName || !slices.Equal(cert.Subject.Organization, spec.organization) {
		return false
	}
	for _, u := range spec.usages {
		if !slices.Contains(cert.ExtKeyUsage, u) {
			return false
		}
	}
	for _, name := range spec.dnsNames {
		if !slices.ContainsFunc(cert.DNSNames, func(have string) bool { return strings.EqualFold(have, name) }) {
			return false
		}
	}
	for _, ip := range spec.ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// issue signs a new certificate for spec with a new ECDSA P-256 key, valid
// for validity but never beyond the CA itself.
func (ca *authority) issue(spec leafSpec, validity time.Duration, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if certPEM, err = ca.sign(spec, key.Public(), validity, now); err != nil {
		return nil, nil, err
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// sign returns a PEM certificate for spec and pub, valid for validity but
// never beyond the CA itself.
func (ca *authority) sign(spec leafSpec, pub crypto.PublicKey, validity time.Duration, now time.Time) ([]byte, error) {
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.commonName, Organization: spec.organization},
		NotBefore:             now.Add(-backdate).UTC(),
		NotAfter:              minTime(now.Add(validity), ca.cert.NotAfter).UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           spec.usages,
		BasicConstraintsValid: true,
		DNSNames:              spec.dnsNames,
		IPAddresses:           spec.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing certificate for %q: %w", spec.commonName, err)
	}
	return encodeCert(der), nil
}

// readCert reads a PEM file holding exactly one certificate.
func readCert(file string) (*x509.Certificate, error) {
	certs, err := certutil.CertsFromFile(file)
	if err != nil {
		return nil, err
	}
	if len(certs) != 1 {
		return nil, fmt.Errorf("%s holds %d certificates, want 1", file, len(certs))
	}
	return certs[0], nil
}

// readPrivateKey reads a PEM RSA or ECDSA private key, tightening the file's
// mode to 0600 if it had become readable by others.
func readPrivateKey(file string) (crypto.Signer, error) {
	if err := tightenMode(file, 0o600); err != nil {
		return nil, err
	}
	key, err := keyutil.PrivateKeyFromFile(file)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: %T cannot sign", file, key)
	}
	return signer, nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der})
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	e, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && e.Equal(b)
}

// keyID is the SHA-1 of the subjectPublicKey bits, RFC 5280 section
// 4.2.1.2 method (1).
func keyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(der, &spki); err != nil {
		return nil, err
	}
	sum := sha1.Sum(spki.PublicKey.Bytes)
	return sum[:], nil
}

// randomSerial returns a random serial number in [1, 2^127].
func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	return serial.Add(serial, big.NewInt(1)), nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
