package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/google/uuid"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// loopbackCertMaxAge is how long the loopback certificate is valid, as
// k8s.io/apiserver's: three years and a day.
const loopbackCertMaxAge = (3*365 + 1) * 24 * time.Hour

// applySecureServing does what SecureServingOptionsWithLoopback.ApplyToConfig
// does (serving, a self-signed certificate that only the server's own
// loopback client trusts, the loopback client, and a health check that
// fails once that certificate has expired), with one difference: the
// loopback certificate's keys are ECDSA P-256 instead of RSA 2048. The
// library makes two RSA keys on every start, 0.1–0.3 s of CPU before
// the server can be built, and the loopback client's every handshake
// then costs an RSA signature; ECDSA keys take well under a millisecond.
func applySecureServing(o *genericoptions.SecureServingOptionsWithLoopback, c *genericapiserver.Config) error {
	if o == nil || o.SecureServingOptions == nil {
		return nil
	}
	if err := o.SecureServingOptions.ApplyTo(&c.SecureServing); err != nil {
		return err
	}
	if c.SecureServing == nil {
		return nil
	}
	notAfter := time.Now().Add(loopbackCertMaxAge)
	certPEM, keyPEM, err := selfSignedLoopbackCert(genericapiserver.LoopbackClientServerNameOverride, notAfter)
	if err != nil {
		return fmt.Errorf("loopback certificate: %w", err)
	}
	cert, err := dynamiccertificates.NewStaticSNICertKeyContent("self-signed loopback", certPEM, keyPEM, genericapiserver.LoopbackClientServerNameOverride)
	if err != nil {
		return fmt.Errorf("loopback certificate: %w", err)
	}
	// First, so that it wins over any other certificate for the name.
	c.SecureServing.SNICerts = append([]dynamiccertificates.SNICertKeyContentProvider{cert}, c.SecureServing.SNICerts...)
	loopback, err := c.SecureServing.NewLoopbackClientConfig(uuid.New().String(), certPEM)
	if err != nil {
		c.SecureServing.SNICerts = c.SecureServing.SNICerts[1:]
		if c.LoopbackClientConfig == nil {
			return err
		}
		return nil
	}
	c.LoopbackClientConfig = loopback
	check := healthz.NamedCheck("loopback-serving-certificate", func(*http.Request) error {
		if time.Now().After(notAfter) {
			return genericoptions.LoopbackCertificateExpiredError{}
		}
		return nil
	})
	c.AddHealthzChecks(check)
	c.AddLivezChecks(check)
	return nil
}

// selfSignedLoopbackCert returns a CA and a serving certificate for host
// signed by it (PEM, the serving certificate then the CA, as the loopback
// client and the SNI content expect), and the serving certificate's key.
func selfSignedLoopbackCert(host string, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	serial := func() *big.Int {
		n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
		return n
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s-ca@%d", host, now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, caKey.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", host, now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{host},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})...)
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, nil, errors.New("encoding the loopback certificate")
	}
	return certPEM, keyPEM, nil
}
