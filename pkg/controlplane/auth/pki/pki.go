// Package pki bootstraps the certificates and keys a gcp control plane needs
// and writes kubeconfigs that use them.
//
// gcp is secure by default: the first start creates a self-signed cluster CA,
// a serving certificate, an admin client certificate, a front-proxy CA and
// client certificate for the aggregator, a key pair for service account
// tokens, and etcd server and client certificates, all in one directory.
// Later starts reuse them and re-issue only leaf certificates that no longer
// fit (missing SAN, other CA, near expiry). A CA is never replaced silently:
// that would lock out every user holding a certificate it signed.
//
// TLS keys are ECDSA P-256; the service account signing key is RSA 2048,
// the algorithm (RS256) every OIDC consumer of service account tokens
// understands.
//
//	files, err := pki.Ensure(pki.Options{Dir: ".gcp/pki", ServingSANs: []string{"gcp.example.com"}})
//	if err != nil {
//		return err
//	}
//	err = pki.WriteKubeconfig(".gcp/admin.kubeconfig", "https://127.0.0.1:6443",
//		files.CACert, files.AdminCert, files.AdminKey, "gcp")
package pki

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Identities in the certificates Ensure issues, exported for the flags and
// policies that must name them.
const (
	// AdminUser is the user name of the admin client certificate.
	AdminUser = "gcp-admin"
	// MastersGroup is the group RBAC lets do everything; the admin
	// certificate carries it.
	MastersGroup = "system:masters"
	// FrontProxyClientUser is the user name the aggregator presents to
	// aggregated API servers, which allow it with --requestheader-allowed-names.
	FrontProxyClientUser = "front-proxy-client"
	// ControllersUser is the controller manager's user name; RBAC's
	// bootstrap policy binds it (bootstrappolicy.ControllersUser).
	ControllersUser = "system:gcp-controllers"
)

// Fixed subjects and lifetimes, so that separate gcp processes sharing a
// directory agree on them.
const (
	caCommonName           = "gcp-ca"
	frontProxyCACommonName = "gcp-front-proxy-ca"
	servingCommonName      = "gcp-apiserver"
	etcdServerCommonName   = "gcp-etcd-server"
	etcdClientUser         = "gcp-apiserver-etcd-client"

	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// renewBefore is how close to expiry a leaf may get before Ensure
	// re-issues it.
	renewBefore = 30 * 24 * time.Hour
)

// Options says where Ensure keeps its files and what the serving
// certificate must cover.
type Options struct {
	// Dir holds every file; Ensure creates it if missing and restricts it
	// to mode 0700.
	Dir string
	// ServingSANs are extra DNS names or IP addresses (from --tls-san) that
	// the serving certificate must be valid for, besides localhost,
	// 127.0.0.1, ::1 and the host name.
	ServingSANs []string
}

// Files holds the paths of everything Ensure manages, so that callers wire
// them into flags without repeating file names.
type Files struct {
	// Dir is the directory holding the files.
	Dir string

	// CACert and CAKey are the cluster CA: it signs the serving, admin and
	// etcd certificates and is the client CA the API server trusts.
	CACert, CAKey string
	// ServingCert and ServingKey are the API server's serving certificate.
	ServingCert, ServingKey string
	// AdminCert and AdminKey are a client certificate for user gcp-admin in
	// group system:masters.
	AdminCert, AdminKey string
	// ControllersCert and ControllersKey are the controller manager's
	// client certificate, user system:gcp-controllers (no groups: its
	// rights come from RBAC's bootstrap policy).
	ControllersCert, ControllersKey string

	// FrontProxyCACert and FrontProxyCAKey are the CA for
	// --requestheader-client-ca-file, kept apart from the cluster CA so that
	// an ordinary client certificate cannot assert request headers.
	FrontProxyCACert, FrontProxyCAKey string
	// FrontProxyClientCert and FrontProxyClientKey are the aggregator's
	// identity towards aggregated API servers (--proxy-client-cert-file).
	FrontProxyClientCert, FrontProxyClientKey string

	// ServiceAccountKey is the PEM RSA private key that signs service account
	// tokens; ServiceAccountPublicKey holds the public keys that verify them.
	ServiceAccountKey, ServiceAccountPublicKey string

	// EtcdServerCert and EtcdServerKey let `gcp etcd` serve TLS on loopback.
	EtcdServerCert, EtcdServerKey string
	// EtcdClientCert and EtcdClientKey are the API server's client identity
	// towards etcd.
	EtcdClientCert, EtcdClientKey string
}

// FilesIn returns the paths Ensure uses in dir, without touching the disk.
func FilesIn(dir string) *Files {
	p := func(name string) string { return filepath.Join(dir, name) }
	return &Files{
		Dir:                     dir,
		CACert:                  p("ca.crt"),
		CAKey:                   p("ca.key"),
		ServingCert:             p("apiserver.crt"),
		ServingKey:              p("apiserver.key"),
		AdminCert:               p("admin.crt"),
		AdminKey:                p("admin.key"),
		ControllersCert:         p("controllers.crt"),
		ControllersKey:          p("controllers.key"),
		FrontProxyCACert:        p("front-proxy-ca.crt"),
		FrontProxyCAKey:         p("front-proxy-ca.key"),
		FrontProxyClientCert:    p("front-proxy-client.crt"),
		FrontProxyClientKey:     p("front-proxy-client.key"),
		ServiceAccountKey:       p("sa.key"),
		ServiceAccountPublicKey: p("sa.pub"),
		EtcdServerCert:          p("etcd-server.crt"),
		EtcdServerKey:           p("etcd-server.key"),
		EtcdClientCert:          p("apiserver-etcd-client.crt"),
		EtcdClientKey:           p("apiserver-etcd-client.key"),
	}
}

// Ensure creates in o.Dir whatever is missing, reuses what exists and
// returns the paths. A leaf certificate is re-issued, with a new key, when it
// lacks a requested SAN, was not signed by the current CA or expires within
// 30 days. A CA or service account key that cannot be read is an error,
// never a reason to generate a new one.
//
// Ensure does not lock o.Dir: processes sharing a directory must not run it
// concurrently (gcp start holds a lock on its data dir).
func Ensure(o Options) (*Files, error) {
	if o.Dir == "" {
		return nil, errors.New("pki: no directory given")
	}
	extraDNS, extraIPs, err := parseSANs(o.ServingSANs)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := os.Chmod(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}

	f := FilesIn(o.Dir)
	now := time.Now()
	ca, err := ensureCA(f.CACert, f.CAKey, caCommonName, now)
	if err != nil {
		return nil, fmt.Errorf("pki: cluster CA: %w", err)
	}
	frontProxyCA, err := ensureCA(f.FrontProxyCACert, f.FrontProxyCAKey, frontProxyCACommonName, now)
	if err != nil {
		return nil, fmt.Errorf("pki: front-proxy CA: %w", err)
	}
	if err := ensureServiceAccountKey(f.ServiceAccountKey, f.ServiceAccountPublicKey); err != nil {
		return nil, fmt.Errorf("pki: service account key: %w", err)
	}

	loopbackIPs := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	servingDNS := append([]string{"localhost"}, hostnameSANs()...)
	leaves := []struct {
		ca   *authority
		spec leafSpec
	}{
		{ca, leafSpec{
			certFile: f.ServingCert, keyFile: f.ServingKey,
			commonName: servingCommonName,
			usages:     serverUsages,
			dnsNames:   dedupDNS(append(servingDNS, extraDNS...)),
			ips:        dedupIPs(append(slices.Clone(loopbackIPs), extraIPs...)),
		}},
		{ca, leafSpec{
			certFile: f.AdminCert, keyFile: f.AdminKey,
			commonName: AdminUser, organization: []string{MastersGroup},
			usages: clientUsages,
		}},
		{ca, leafSpec{
			certFile: f.ControllersCert, keyFile: f.ControllersKey,
			commonName: ControllersUser,
			usages:     clientUsages,
		}},
		{ca, leafSpec{
			certFile: f.EtcdServerCert, keyFile: f.EtcdServerKey,
			commonName: etcdServerCommonName,
			// etcd's gRPC gateway dials its own listener with the server
			// certificate, so it must be a client certificate too.
			usages:   serverClientUsages,
			dnsNames: []string{"localhost"},
			ips:      loopbackIPs,
		}},
		{ca, leafSpec{
			certFile: f.EtcdClientCert, keyFile: f.EtcdClientKey,
			commonName: etcdClientUser,
			usages:     clientUsages,
		}},
		{frontProxyCA, leafSpec{
			certFile: f.FrontProxyClientCert, keyFile: f.FrontProxyClientKey,
			commonName: FrontProxyClientUser,
			usages:     clientUsages,
		}},
	}
	for _, l := range leaves {
		if err := ensureLeaf(l.ca, l.spec, now); err != nil {
			return nil, fmt.Errorf("pki: %s: %w", l.spec.commonName, err)
		}
	}
	return f, nil
}

// IssueClientCert signs, with the CA in caCertFile and caKeyFile, a client
// certificate for user in groups, valid for validity (cut at the CA's own
// expiry). It returns the PEM certificate and a new PEM ECDSA key; nothing is
// written to disk. Tests and docs use it to make users other than the admin.
func IssueClientCert(caCertFile, caKeyFile string, user string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, errors.New("pki: client certificate needs a user name")
	}
	if validity <= 0 {
		return nil, nil, fmt.Errorf("pki: client certificate validity must be positive, got %v", validity)
	}
	ca, err := loadCA(caCertFile, caKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	certPEM, keyPEM, err = ca.issue(leafSpec{
		commonName:   user,
		organization: groups,
		usages:       clientUsages,
	}, validity, time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	return certPEM, keyPEM, nil
}

// parseSANs splits extra SANs into DNS names and IP addresses, rejecting
// what is neither, so that a typo in --tls-san fails at start rather than
// as a TLS error in some client later.
func parseSANs(sans []string) (dnsNames []string, ips []net.IP, err error) {
	for _, s := range sans {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if ip := net.ParseIP(s); ip != nil {
			ips = append(ips, ip)
			continue
		}
		s = strings.ToLower(s)
		if validation.IsDNS1123Subdomain(s) != nil && validation.IsWildcardDNS1123Subdomain(s) != nil {
			return nil, nil, fmt.Errorf("pki: TLS SAN %q is neither an IP address nor a DNS name", s)
		}
		dnsNames = append(dnsNames, s)
	}
	return dnsNames, ips, nil
}

// hostnameSANs returns the host name as a SAN, or nothing when it is not a
// valid DNS name (a certificate cannot carry it).
func hostnameSANs() []string {
	h, err := os.Hostname()
	if err != nil {
		return nil
	}
	h = strings.ToLower(h)
	if validation.IsDNS1123Subdomain(h) != nil {
		return nil
	}
	return []string{h}
}

func dedupDNS(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func dedupIPs(ips []net.IP) []net.IP {
	var out []net.IP
	for _, ip := range ips {
		if !slices.ContainsFunc(out, ip.Equal) {
			out = append(out, ip)
		}
	}
	return out
}
