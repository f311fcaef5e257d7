// Package pki bootstraps the certificates and keys a gcp control plane needs
// and writes kubeconfigs that use them. It is `gcp pki` and what `gcp start`
// runs on its own data dir.
//
// gcp is secure by default: Ensure creates a self-signed cluster CA, a
// serving certificate, admin and controller manager client certificates, a
// front-proxy CA and client certificate for the aggregator and a key pair
// for service account tokens, all in one directory, laid out as kubeadm lays
// out /etc/kubernetes/pki. Given etcd members, it adds a separate etcd CA
// (so that a certificate from the cluster CA cannot reach etcd, CIS 2.7),
// each member's server and peer certificates in etcd/<name>/, and the API
// server's etcd client certificate.
//
// Later runs reuse everything. A leaf certificate that no longer fits (a
// missing SAN, another CA, near expiry) is re-issued for the key it already
// has: keys are only ever created, never replaced. A CA is never replaced
// silently either: that would lock out every user holding a certificate it
// signed. Renew re-issues leaf certificates before they expire, keeping the
// CAs and keys; Inspect lists every certificate with its expiry.
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
	etcdCACommonName       = "gcp-etcd-ca"
	servingCommonName      = "gcp-apiserver"
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
	// EtcdMembers are the etcd members to issue server and peer
	// certificates for. Any member means an etcd CA and the API server's
	// etcd client certificate too; none means no etcd certificates (gcp
	// start's embedded etcd listens on a unix socket only).
	EtcdMembers []EtcdMember
	// NoSync writes the files without syncing them to disk, which saves
	// two fsyncs per file (a few milliseconds each on a real disk) where
	// the directory is thrown away afterwards, as the test server's is. A
	// machine crash may then leave empty files; a process that stops or
	// crashes leaves them whole.
	NoSync bool
}

// EtcdMember is one etcd member's name and the host names and IP addresses
// its server and peer certificates are valid for, besides localhost,
// 127.0.0.1 and ::1.
type EtcdMember struct {
	// Name is the member's --name; its certificates go to etcd/<Name>/.
	Name string
	// Hosts are DNS names or IP addresses other members and clients reach
	// the member by.
	Hosts []string
}

// ParseEtcdMember parses "name=host[,host...]" (gcp pki's --etcd-member):
// a member name and the DNS names or IP addresses it is reached by.
func ParseEtcdMember(s string) (EtcdMember, error) {
	name, hosts, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return EtcdMember{}, fmt.Errorf("etcd member %q: want name=host[,ip], e.g. etcd-0=10.0.0.10", s)
	}
	m := EtcdMember{Name: name}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			m.Hosts = append(m.Hosts, h)
		}
	}
	if err := m.validate(); err != nil {
		return EtcdMember{}, err
	}
	return m, nil
}

func (m EtcdMember) validate() error {
	if errs := validation.IsDNS1123Subdomain(m.Name); len(errs) > 0 {
		return fmt.Errorf("etcd member name %q: %s", m.Name, strings.Join(errs, "; "))
	}
	if _, _, err := parseSANs(m.Hosts); err != nil {
		return fmt.Errorf("etcd member %q: %w", m.Name, err)
	}
	return nil
}

// EtcdMemberFiles are the paths of one etcd member's certificates.
type EtcdMemberFiles struct {
	// ServerCert and ServerKey serve the member's client URLs
	// (--cert-file, --key-file).
	ServerCert, ServerKey string
	// PeerCert and PeerKey serve and dial its peer URLs (--peer-cert-file,
	// --peer-key-file).
	PeerCert, PeerKey string
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

	// EtcdCACert and EtcdCAKey are the etcd CA: it signs the members'
	// certificates and the API server's etcd client certificate, and is the
	// CA etcd trusts (--trusted-ca-file, --peer-trusted-ca-file) and the API
	// server trusts etcd by (--etcd-cafile).
	EtcdCACert, EtcdCAKey string
	// EtcdClientCert and EtcdClientKey are the API server's client identity
	// towards etcd (--etcd-certfile, --etcd-keyfile), from the etcd CA.
	EtcdClientCert, EtcdClientKey string
}

// EtcdMember returns the paths of member name's certificates.
func (f *Files) EtcdMember(name string) EtcdMemberFiles {
	dir := filepath.Join(f.Dir, "etcd", name)
	return EtcdMemberFiles{
		ServerCert: filepath.Join(dir, "server.crt"),
		ServerKey:  filepath.Join(dir, "server.key"),
		PeerCert:   filepath.Join(dir, "peer.crt"),
		PeerKey:    filepath.Join(dir, "peer.key"),
	}
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
		EtcdCACert:              p("etcd/ca.crt"),
		EtcdCAKey:               p("etcd/ca.key"),
		EtcdClientCert:          p("apiserver-etcd-client.crt"),
		EtcdClientKey:           p("apiserver-etcd-client.key"),
	}
}

// Ensure creates in o.Dir whatever is missing, reuses what exists and
// returns the paths. A leaf certificate is re-issued, for the key it
// already has, when it lacks a requested SAN, was not signed by the current
// CA or expires within 30 days. A CA or key that cannot be read is an error,
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
	members := map[string]bool{}
	for _, m := range o.EtcdMembers {
		if err := m.validate(); err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		if members[m.Name] {
			return nil, fmt.Errorf("pki: etcd member %q given twice", m.Name)
		}
		members[m.Name] = true
	}
	if err := makePrivateDir(o.Dir); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}

	f := FilesIn(o.Dir)
	w := writer{noSync: o.NoSync}
	now := time.Now()
	authorities := map[string]*authority{}
	for _, c := range f.authorities() {
		if c.name == etcdCAName && len(o.EtcdMembers) == 0 {
			continue
		}
		if err := makePrivateDir(filepath.Dir(c.certFile)); err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		ca, err := ensureCA(w, c.certFile, c.keyFile, c.commonName, now)
		if err != nil {
			return nil, fmt.Errorf("pki: %s: %w", c.name, err)
		}
		authorities[c.name] = ca
	}
	if err := ensureServiceAccountKey(w, f.ServiceAccountKey, f.ServiceAccountPublicKey); err != nil {
		return nil, fmt.Errorf("pki: service account key: %w", err)
	}

	servingDNS := append([]string{"localhost"}, hostnameSANs()...)
	leaves := []leaf{
		{name: "apiserver", ca: clusterCAName, spec: leafSpec{
			certFile: f.ServingCert, keyFile: f.ServingKey,
			commonName: servingCommonName,
			usages:     serverUsages,
			dnsNames:   dedupDNS(append(servingDNS, extraDNS...)),
			ips:        dedupIPs(append(loopbackIPs(), extraIPs...)),
		}},
		{name: "admin", ca: clusterCAName, spec: leafSpec{
			certFile: f.AdminCert, keyFile: f.AdminKey,
			commonName: AdminUser, organization: []string{MastersGroup},
			usages: clientUsages,
		}},
		{name: "controllers", ca: clusterCAName, spec: leafSpec{
			certFile: f.ControllersCert, keyFile: f.ControllersKey,
			commonName: ControllersUser,
			usages:     clientUsages,
		}},
		{name: "front-proxy-client", ca: frontProxyCAName, spec: leafSpec{
			certFile: f.FrontProxyClientCert, keyFile: f.FrontProxyClientKey,
			commonName: FrontProxyClientUser,
			usages:     clientUsages,
		}},
	}
	if len(o.EtcdMembers) > 0 {
		leaves = append(leaves, leaf{name: "apiserver-etcd-client", ca: etcdCAName, spec: leafSpec{
			certFile: f.EtcdClientCert, keyFile: f.EtcdClientKey,
			commonName: etcdClientUser,
			usages:     clientUsages,
		}})
	}
	for _, m := range o.EtcdMembers {
		mf := f.EtcdMember(m.Name)
		if err := makePrivateDir(filepath.Dir(mf.ServerCert)); err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		dnsNames, ips, _ := parseSANs(m.Hosts)
		dnsNames = dedupDNS(append([]string{"localhost"}, dnsNames...))
		ips = dedupIPs(append(loopbackIPs(), ips...))
		// Both are server and client certificates: members dial each other
		// with their peer certificate, and etcd's gRPC gateway dials its own
		// client listener with the server certificate.
		leaves = append(leaves,
			leaf{name: "etcd/" + m.Name + "/server", ca: etcdCAName, spec: leafSpec{
				certFile: mf.ServerCert, keyFile: mf.ServerKey,
				commonName: m.Name, usages: serverClientUsages, dnsNames: dnsNames, ips: ips,
			}},
			leaf{name: "etcd/" + m.Name + "/peer", ca: etcdCAName, spec: leafSpec{
				certFile: mf.PeerCert, keyFile: mf.PeerKey,
				commonName: m.Name, usages: serverClientUsages, dnsNames: dnsNames, ips: ips,
			}})
	}
	for _, l := range leaves {
		if err := ensureLeaf(w, authorities[l.ca], l.spec, now); err != nil {
			return nil, fmt.Errorf("pki: %s: %w", l.name, err)
		}
	}
	return f, nil
}

// makePrivateDir creates dir with mode 0700, or tightens an existing one.
func makePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

func loopbackIPs() []net.IP { return []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")} }

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
