package csrsigning

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/keyutil"
	cliflag "k8s.io/component-base/cli/flag"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// testCA is a self-signed CA valid from notBefore to notAfter.
type testCA struct {
	certPEM, keyPEM []byte
	cert            *x509.Certificate
}

func (c testCA) CurrentCertKeyContent() ([]byte, []byte) { return c.certPEM, c.keyPEM }

func newTestCA(t *testing.T, notBefore, notAfter time.Time) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM: keyPEM, cert: cert}
}

// newRequest returns a PEM CSR for subject, with the given DNS SANs.
func newRequest(t *testing.T, subject pkix.Name, dnsNames ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dnsNames}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func parseRequest(t *testing.T, p []byte) *x509.CertificateRequest {
	t.Helper()
	req, err := ParseCSR(p)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func parseCert(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(p)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %q", p)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

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

func TestValidateKubeAPIServerClientUsages(t *testing.T) {
	for _, tc := range []struct {
		usages  []certificatesv1.KeyUsage
		wantErr string
	}{
		{[]certificatesv1.KeyUsage{"client auth"}, ""},
		{[]certificatesv1.KeyUsage{"client auth", "digital signature", "key encipherment"}, ""},
		{[]certificatesv1.KeyUsage{"client auth", "server auth"}, "invalid usage for client certificate: server auth"},
		{[]certificatesv1.KeyUsage{"client auth", "cert sign"}, "invalid usage for client certificate: cert sign"},
		{[]certificatesv1.KeyUsage{"digital signature"}, "missing required usage for client certificate: client auth"},
		{nil, "missing required usage for client certificate: client auth"},
	} {
		err := ValidateKubeAPIServerClientUsages(tc.usages)
		if got := errString(err); got != tc.wantErr {
			t.Errorf("%v: got %q, want %q", tc.usages, got, tc.wantErr)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// testSigner is a Signer on a fake clientset holding csrs, its cache
// filled by hand, its clock at now.
func testSigner(t *testing.T, ca testCA, max time.Duration, now time.Time, csrs ...*certificatesv1.CertificateSigningRequest) (*Signer, *fake.Clientset) {
	t.Helper()
	var objs []runtime.Object
	for _, c := range csrs {
		objs = append(objs, c)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	s, err := New(factory, client, ca, max)
	if err != nil {
		t.Fatal(err)
	}
	s.clock = clocktesting.NewFakePassiveClock(now)
	indexer := factory.Certificates().V1().CertificateSigningRequests().Informer().GetIndexer()
	for _, c := range csrs {
		if err := indexer.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	client.ClearActions()
	return s, client
}

func csr(name string, request []byte, usages []certificatesv1.KeyUsage, conditions ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
	c := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    request,
			SignerName: SignerName,
			Usages:     usages,
		},
	}
	for _, t := range conditions {
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue})
	}
	return c
}

// statusUpdate returns the CSR of the only action, a status update, or
// nil if there was no action.
func statusUpdate(t *testing.T, client *fake.Clientset) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	actions := client.Actions()
	if len(actions) == 0 {
		return nil
	}
	if len(actions) != 1 || actions[0].GetVerb() != "update" || actions[0].GetSubresource() != "status" {
		t.Fatalf("actions %v, want one status update", actions)
	}
	return actions[0].(k8stesting.UpdateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
}

func TestSyncSigns(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(10*365*24*time.Hour))
	request := newRequest(t, pkix.Name{CommonName: "bob", Organization: []string{"team"}})

	for _, tc := range []struct {
		name         string
		seconds      *int32
		max          time.Duration
		wantLifetime time.Duration // NotAfter - now
	}{
		{"the flag's duration", nil, 365 * 24 * time.Hour, 365*24*time.Hour - Backdate},
		{"expirationSeconds", ptr.To[int32](3600), 365 * 24 * time.Hour, time.Hour},
		{"expirationSeconds capped by the flag", ptr.To[int32](48 * 3600), 24 * time.Hour, 24*time.Hour - Backdate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := csr("bob", request, []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, certificatesv1.CertificateApproved)
			c.Spec.ExpirationSeconds = tc.seconds
			s, client := testSigner(t, ca, tc.max, now, c)
			if err := s.sync(context.Background(), "bob"); err != nil {
				t.Fatal(err)
			}
			got := statusUpdate(t, client)
			if got == nil {
				t.Fatal("not signed")
			}
			cert := parseCert(t, got.Status.Certificate)
			if cert.Subject.CommonName != "bob" || !slices.Equal(cert.Subject.Organization, []string{"team"}) {
				t.Errorf("subject %v", cert.Subject)
			}
			if lifetime := cert.NotAfter.Sub(now); lifetime != tc.wantLifetime {
				t.Errorf("lifetime %v, want %v", lifetime, tc.wantLifetime)
			}
			if d := now.Sub(cert.NotBefore); d != Backdate {
				t.Errorf("NotBefore %v before now, want %v", d, Backdate)
			}
			if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
				t.Errorf("ExtKeyUsage %v", cert.ExtKeyUsage)
			}
			if len(got.Status.Conditions) != 1 {
				t.Errorf("conditions changed: %v", got.Status.Conditions)
			}
		})
	}
}

func TestSyncFails(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(time.Hour*24*365))
	request := newRequest(t, pkix.Name{CommonName: "mallory"})
	for _, tc := range []struct {
		usages      []certificatesv1.KeyUsage
		wantMessage string
	}{
		{[]certificatesv1.KeyUsage{"client auth", "server auth"}, "invalid usage for client certificate: server auth"},
		{[]certificatesv1.KeyUsage{"digital signature"}, "missing required usage for client certificate: client auth"},
	} {
		s, client := testSigner(t, ca, time.Hour, now, csr("m", request, tc.usages, certificatesv1.CertificateApproved))
		if err := s.sync(context.Background(), "m"); err != nil {
			t.Fatal(err)
		}
		got := statusUpdate(t, client)
		if got == nil {
			t.Fatalf("%v: no status update", tc.usages)
		}
		if len(got.Status.Certificate) != 0 {
			t.Errorf("%v: signed", tc.usages)
		}
		want := certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue,
			Reason: FailedReason, Message: tc.wantMessage, LastUpdateTime: metav1.NewTime(now),
		}
		if n := len(got.Status.Conditions); n != 2 || got.Status.Conditions[1] != want {
			t.Errorf("%v: conditions %+v, want Approved then %+v", tc.usages, got.Status.Conditions, want)
		}
	}
}

func TestSyncLeavesAlone(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(time.Hour*24*365))
	request := newRequest(t, pkix.Name{CommonName: "carol"})
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}
	otherSigner := csr("x", request, usages, certificatesv1.CertificateApproved)
	otherSigner.Spec.SignerName = certificatesv1.KubeletServingSignerName
	issued := csr("x", request, usages, certificatesv1.CertificateApproved)
	issued.Status.Certificate = []byte("already")
	for name, c := range map[string]*certificatesv1.CertificateSigningRequest{
		"pending":                 csr("x", request, usages),
		"denied":                  csr("x", request, usages, certificatesv1.CertificateDenied),
		"approved and denied":     csr("x", request, usages, certificatesv1.CertificateApproved, certificatesv1.CertificateDenied),
		"failed":                  csr("x", request, usages, certificatesv1.CertificateApproved, certificatesv1.CertificateFailed),
		"another signer":          otherSigner,
		"issued":                  issued,
		"failed, with bad usages": csr("x", request, []certificatesv1.KeyUsage{"server auth"}, certificatesv1.CertificateApproved, certificatesv1.CertificateFailed),
	} {
		s, client := testSigner(t, ca, time.Hour, now, c)
		if err := s.sync(context.Background(), "x"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if a := client.Actions(); len(a) != 0 {
			t.Errorf("%s: actions %v, want none", name, a)
		}
	}
	s, _ := testSigner(t, ca, time.Hour, now)
	if err := s.sync(context.Background(), "gone"); err != nil {
		t.Errorf("deleted CSR: %v", err)
	}
}

// TestRun signs a CSR approved after the signer started, through the
// informer and the queue.
func TestRun(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(time.Hour*24*365))
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	s, err := New(factory, client, ca, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown() })
	factory.Start(ctx.Done())
	go func() { defer close(done); s.Run(ctx) }()

	csrs := client.CertificatesV1().CertificateSigningRequests()
	c := csr("dave", newRequest(t, pkix.Name{CommonName: "dave"}), []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth})
	if _, err := csrs.Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	if _, err := csrs.UpdateApproval(ctx, "dave", c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := csrs.Get(ctx, "dave", metav1.GetOptions{})
		return err == nil && len(got.Status.Certificate) > 0, err
	})
	if err != nil {
		t.Fatalf("not signed: %v", err)
	}
}

func TestNewRejectsBadCA(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	if _, err := New(factory, client, testCA{certPEM: []byte("junk"), keyPEM: []byte("junk")}, time.Hour); err == nil {
		t.Error("accepted a CA that is not PEM")
	}
	ca := newTestCA(t, time.Now(), time.Now().Add(time.Hour))
	if _, err := New(factory, client, ca, 0); err == nil {
		t.Error("accepted a zero duration")
	}
}

// TestDescriptorWithoutCA: without a CA the controller idles, as
// kube-controller-manager skips it, instead of failing the manager.
func TestDescriptorWithoutCA(t *testing.T) {
	ctrl, err := Descriptor().New(context.Background(), controllers.Context{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ctrl.(skipped); !ok {
		t.Fatalf("got %T, want the idle controller", ctrl)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ctrl.Run(ctx)
}

// TestCAFilesReload: a CA replaced on disk is the one the next
// certificate is signed with, without a restart.
func TestCAFilesReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	write := func(ca testCA) {
		t.Helper()
		// The key first: the loader reads the pair when the cert changes.
		if err := os.WriteFile(keyFile, ca.keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(certFile, ca.certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	first, second := newTestCA(t, now.Add(-time.Hour), now.Add(time.Hour)), newTestCA(t, now.Add(-time.Hour), now.Add(time.Hour))
	write(first)
	content, err := dynamiccertificates.NewDynamicServingContentFromFiles("csr-controller", certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	s, err := New(factory, client, content, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown() })
	factory.Start(ctx.Done())
	go func() { defer close(done); s.Run(ctx) }()

	if ca, err := s.currentCA(); err != nil || !ca.Certificate.Equal(first.cert) {
		t.Fatalf("current CA is not the first one (error %v)", err)
	}
	write(second)
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		ca, err := s.currentCA()
		return err == nil && ca.Certificate.Equal(second.cert), nil
	})
	if err != nil {
		t.Fatal("the signer still signs with the replaced CA")
	}
}

// TestFlags: kube-controller-manager's --cluster-signing-* flags, their
// rules, and which CA the signer gets from them.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args               []string
		wantErr            string
		wantCert, wantKey  string
		wantDurationInFlag time.Duration
	}{
		{args: nil, wantDurationInFlag: 365 * 24 * time.Hour},
		{args: []string{"--cluster-signing-cert-file=c", "--cluster-signing-key-file=k", "--cluster-signing-duration=1h"},
			wantCert: "c", wantKey: "k", wantDurationInFlag: time.Hour},
		{args: []string{"--cluster-signing-kube-apiserver-client-cert-file=c2", "--cluster-signing-kube-apiserver-client-key-file=k2"},
			wantCert: "c2", wantKey: "k2", wantDurationInFlag: 365 * 24 * time.Hour},
		{args: []string{"--cluster-signing-cert-file=c"}, wantErr: `"cluster-signing": cannot specify cert without key`},
		{args: []string{"--cluster-signing-kube-apiserver-client-key-file=k"}, wantErr: `"cluster-signing-kube-apiserver-client": cannot specify key without cert`},
		{args: []string{"--cluster-signing-cert-file=c", "--cluster-signing-key-file=k", "--cluster-signing-kube-apiserver-client-cert-file=c2", "--cluster-signing-kube-apiserver-client-key-file=k2"},
			wantErr: "cannot specify --cluster-signing-{cert,key}-file and other --cluster-signing-*-file flags at the same time"},
		{args: []string{"--cluster-signing-duration=0s"}, wantErr: "--cluster-signing-duration must be positive, got 0s"},
	} {
		o := NewOptions()
		fss := cliflag.NamedFlagSets{}
		o.AddFlags(&fss)
		if err := fss.FlagSet("csrsigning controller").Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		errs := o.Validate()
		if tc.wantErr != "" {
			if len(errs) != 1 || errs[0].Error() != tc.wantErr {
				t.Errorf("%v: errors %v, want %q", tc.args, errs, tc.wantErr)
			}
			continue
		}
		if len(errs) > 0 {
			t.Errorf("%v: %v", tc.args, errs)
		}
		cert, key := o.KubeAPIServerClientFiles()
		if cert != tc.wantCert || key != tc.wantKey || o.Duration != tc.wantDurationInFlag {
			t.Errorf("%v: CA %q %q, duration %v", tc.args, cert, key, o.Duration)
		}
	}
}

// writeKubeconfig writes a kubeconfig Options.Config can read, of a
// server nothing dials.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// TestFlagsReachTheController: `gcp controllers --cluster-signing-*`
// arrive in the Config as the signer's own options, which the manager puts
// in the signer's Context only.
func TestFlagsReachTheController(t *testing.T) {
	kubeconfig := writeKubeconfig(t)
	o := controllers.NewOptions([]controllers.Descriptor{Descriptor()})
	fss := cliflag.NamedFlagSets{}
	o.AddFlags(&fss)
	fs := pflag.NewFlagSet("gcp controllers", pflag.ContinueOnError)
	for _, f := range fss.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--kubeconfig", kubeconfig, "--secure-port=0",
		"--cluster-signing-cert-file=/ca.crt", "--cluster-signing-key-file=/ca.key", "--cluster-signing-duration=720h"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	want := Options{ClusterSigningCertFile: "/ca.crt", ClusterSigningKeyFile: "/ca.key", Duration: 720 * time.Hour}
	if got, ok := cfg.ControllerOptions[Name].(*Options); !ok || *got != want {
		t.Errorf("config has %#v, want %+v", cfg.ControllerOptions[Name], want)
	}
}

// TestClusterSigningCA: the manager's ClusterSigningCA (`gcp start`'s
// cluster CA) reaches the signer's options as the cluster-wide pair, with
// no import of this package by the caller.
func TestClusterSigningCA(t *testing.T) {
	o := controllers.NewOptions([]controllers.Descriptor{Descriptor()})
	o.Kubeconfig = writeKubeconfig(t)
	o.SecureServing.BindPort = 0
	o.ClusterSigningCA = controllers.CAFiles{CertFile: "/ca.crt", KeyFile: "/ca.key"}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	want := Options{ClusterSigningCertFile: "/ca.crt", ClusterSigningKeyFile: "/ca.key", Duration: DefaultClusterSigningDuration}
	if got, ok := cfg.ControllerOptions[Name].(*Options); !ok || *got != want {
		t.Errorf("config has %#v, want %+v", cfg.ControllerOptions[Name], want)
	}
}
