package csrsigning

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/utils/ptr"
)

var clientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}

func TestSign(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(10*365*24*time.Hour))
	authority, err := ParseAuthority(ca.certPEM, ca.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	subject := pkix.Name{CommonName: "alice", Organization: []string{"dev", "ops"}}
	req := parseRequest(t, newRequest(t, subject))

	for _, tc := range []struct {
		name         string
		ttl          time.Duration
		wantNotAfter time.Time
	}{
		{"long lived certificates end Backdate early", 24 * time.Hour, now.Add(24*time.Hour - Backdate)},
		{"short lived certificates are not cut", time.Hour, now.Add(time.Hour)},
		{"never beyond the CA", 20 * 365 * 24 * time.Hour, ca.cert.NotAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := authority.Sign(req, clientUsages, tc.ttl, now)
			if err != nil {
				t.Fatal(err)
			}
			cert := parseCert(t, p)
			if cert.Subject.CommonName != "alice" || !slices.Equal(cert.Subject.Organization, []string{"dev", "ops"}) {
				t.Errorf("subject %v, want CN alice O dev,ops", cert.Subject)
			}
			if !cert.NotBefore.Equal(now.Add(-Backdate)) {
				t.Errorf("NotBefore %v, want %v", cert.NotBefore, now.Add(-Backdate))
			}
			if !cert.NotAfter.Equal(tc.wantNotAfter) {
				t.Errorf("NotAfter %v, want %v", cert.NotAfter, tc.wantNotAfter)
			}
			if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
				t.Errorf("ExtKeyUsage %v, want client auth only", cert.ExtKeyUsage)
			}
			if cert.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment {
				t.Errorf("KeyUsage %v, want digital signature and key encipherment", cert.KeyUsage)
			}
			if cert.IsCA {
				t.Error("issued a CA certificate")
			}
			pool := x509.NewCertPool()
			pool.AddCert(ca.cert)
			if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("does not verify as a client certificate of the CA: %v", err)
			}
		})
	}

	t.Run("SANs are carried over, as upstream", func(t *testing.T) {
		p, err := authority.Sign(parseRequest(t, newRequest(t, subject, "alice.example.com")), clientUsages, time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		if got := parseCert(t, p).DNSNames; !slices.Equal(got, []string{"alice.example.com"}) {
			t.Errorf("DNS names %v", got)
		}
	})
	t.Run("an expired CA signs nothing", func(t *testing.T) {
		for after, want := range map[time.Duration]string{
			time.Minute:      "refusing to sign a certificate that expired in the past",
			10 * time.Minute: "the signer has expired",
		} {
			_, err := authority.Sign(req, clientUsages, time.Hour, ca.cert.NotAfter.Add(after))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%v after the CA's end: got %v, want %s", after, err, want)
			}
		}
	})
	t.Run("a forged request is refused", func(t *testing.T) {
		forged := *req
		forged.Signature = slices.Clone(req.Signature)
		forged.Signature[len(forged.Signature)-1] ^= 0xff
		if _, err := authority.Sign(&forged, clientUsages, time.Hour, now); err == nil {
			t.Error("signed a request with a bad signature")
		}
	})
	t.Run("unknown usages are refused", func(t *testing.T) {
		if _, err := authority.Sign(req, []certificatesv1.KeyUsage{"teleport"}, time.Hour, now); err == nil {
			t.Error("signed with an unknown usage")
		}
	})
}

func TestDuration(t *testing.T) {
	max := 24 * time.Hour
	for _, tc := range []struct {
		seconds *int32
		want    time.Duration
	}{
		{nil, max},
		{ptr.To[int32](3600), time.Hour},
		{ptr.To[int32](7 * 24 * 3600), max},
		{ptr.To[int32](60), MinDuration},
		{ptr.To[int32](600), 10 * time.Minute},
	} {
		if got := Duration(tc.seconds, max); got != tc.want {
			t.Errorf("Duration(%v, %v) = %v, want %v", ptr.Deref(tc.seconds, -1), max, got, tc.want)
		}
	}
}
