package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/google/uuid"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
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
	loopback.Wrap(newFirstConnGate().wrap)
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

// selfSignedLoopbackCert returns a serving certificate for host and the
// self-signed CA that signed it (PEM, the serving certificate first, as
// the loopback client and the SNI content expect), and the serving
// certificate's key.
func selfSignedLoopbackCert(host string, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: fmt.Sprintf("%s-ca@%d", host, now.Unix())}, caKey)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", host, now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{host},
	}, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	if certPEM, err = certutil.EncodeCertificates(leaf, ca); err != nil {
		return nil, nil, err
	}
	if keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}
