package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
)

// CertificateStatus is one certificate as Inspect finds it.
type CertificateStatus struct {
	// Name is how `gcp pki check` and `gcp pki renew` name it: its path
	// under the directory without extension ("apiserver", "etcd/ca",
	// "etcd/etcd-0/peer"), or a kubeconfig's file name.
	Name string
	// File is the certificate's (or kubeconfig's) path.
	File string
	// Authority names the CA that signs it; empty for a CA.
	Authority string
	// NotAfter is when it expires; zero when it could not be read.
	NotAfter time.Time
	// Problem says what is wrong (unreadable, expired, not signed by its
	// CA, not matching its key); empty when nothing is.
	Problem string
}

// Inspect returns every CA and leaf certificate in dir, CAs first, with its
// expiry and whatever is wrong with it. It changes nothing.
func Inspect(dir string, now time.Time) ([]CertificateStatus, error) {
	f := FilesIn(dir)
	var out []CertificateStatus
	cas := map[string]*x509.Certificate{}
	for _, c := range f.authorities() {
		ok, err := exists(c.certFile)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		st := CertificateStatus{Name: c.name, File: c.certFile}
		cert, err := readCert(c.certFile)
		switch {
		case err != nil:
			st.Problem = err.Error()
		case !cert.IsCA:
			st.Problem = "not a CA certificate"
		default:
			cas[c.name] = cert
			st.NotAfter = cert.NotAfter
			st.Problem = expiryProblem(cert, now)
		}
		out = append(out, st)
	}
	leaves, err := f.existingLeaves()
	if err != nil {
		return nil, err
	}
	for _, l := range leaves {
		st := CertificateStatus{Name: l.name, File: l.spec.certFile, Authority: l.ca}
		cert, err := readCert(l.spec.certFile)
		if err != nil {
			st.Problem = err.Error()
			out = append(out, st)
			continue
		}
		st.NotAfter = cert.NotAfter
		st.Problem = leafProblem(cert, cas[l.ca], l.ca, now)
		if st.Problem == "" {
			if key, err := readPrivateKey(l.spec.keyFile); err != nil {
				st.Problem = "key: " + err.Error()
			} else if !publicKeysEqual(key.Public(), cert.PublicKey) {
				st.Problem = "key " + l.spec.keyFile + " does not belong to the certificate"
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// InspectKubeconfig returns the status of the client certificate embedded
// in the kubeconfig at path (its current context's user), checked against
// the CA embedded for its cluster.
func InspectKubeconfig(path string, now time.Time) CertificateStatus {
	st := CertificateStatus{File: path}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		st.Problem = err.Error()
		return st
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.AuthInfos[ctx.AuthInfo] == nil || cfg.Clusters[ctx.Cluster] == nil {
		st.Problem = "no current context with a user and a cluster"
		return st
	}
	st.Authority = "embedded CA"
	certs, err := certutil.ParseCertsPEM(cfg.AuthInfos[ctx.AuthInfo].ClientCertificateData)
	if err != nil || len(certs) == 0 {
		st.Problem = "no embedded client certificate"
		return st
	}
	st.NotAfter = certs[0].NotAfter
	cas, err := certutil.ParseCertsPEM(cfg.Clusters[ctx.Cluster].CertificateAuthorityData)
	if err != nil || len(cas) == 0 {
		st.Problem = "no embedded CA certificate"
		return st
	}
	st.Problem = leafProblem(certs[0], cas[0], "the embedded CA", now)
	return st
}

// expiryProblem says whether cert has expired or is not valid yet.
func expiryProblem(cert *x509.Certificate, now time.Time) string {
	switch {
	case !now.Before(cert.NotAfter):
		return "expired"
	case now.Before(cert.NotBefore):
		return "not valid before " + cert.NotBefore.UTC().Format(time.RFC3339)
	}
	return ""
}

// leafProblem says what is wrong with a leaf certificate: its validity, or
// that it was not signed by ca (nil when the CA is missing).
func leafProblem(cert, ca *x509.Certificate, caName string, now time.Time) string {
	if p := expiryProblem(cert, now); p != "" {
		return p
	}
	if ca == nil {
		return "its CA " + caName + " is missing or unreadable"
	}
	if cert.CheckSignatureFrom(ca) != nil {
		return "not signed by " + caName
	}
	return ""
}

// Skipped is a leaf certificate Renew left as it was, and why.
type Skipped struct {
	// Name is the certificate's name, as Inspect gives it.
	Name string
	// Why says what Renew lacked to renew it.
	Why string
}

// Renew re-issues the leaf certificates in dir named in names (all of them
// when names is empty) for the keys they have, each signed by its CA with
// the subject, usages and SANs it had and valid for another year (never
// beyond the CA). CAs and keys are kept, so nothing else needs to change;
// processes reading the files pick the new certificates up when they
// reload them (gcp apiserver reloads its serving certificate by itself).
// Only the CAs of the leaves renewed are read. With names empty, a leaf
// whose CA has no key in dir (a split deployment may keep the etcd CA's
// key on the etcd machines alone) is skipped and returned as such; a leaf
// named whose CA has no key is an error, after the others are renewed. It
// returns the names renewed.
func Renew(dir string, names []string, now time.Time) (renewed []string, skipped []Skipped, err error) {
	f := FilesIn(dir)
	leaves, err := f.existingLeaves()
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	var known []string
	for _, l := range leaves {
		known = append(known, l.name)
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, nil, fmt.Errorf("pki: no certificate %q in %s; there are: %s", n, dir, strings.Join(known, ", "))
		}
	}
	wanted := func(l leaf) bool { return len(names) == 0 || slices.Contains(names, l.name) }
	needed := map[string]bool{}
	for _, l := range leaves {
		if wanted(l) {
			needed[l.ca] = true
		}
	}
	cas := map[string]*authority{}
	keyless := map[string]string{}
	for _, c := range f.authorities() {
		if !needed[c.name] {
			continue
		}
		if ok, err := exists(c.certFile); err != nil || !ok {
			continue
		}
		if ok, err := exists(c.keyFile); err != nil {
			return nil, nil, fmt.Errorf("pki: %s: %w", c.name, err)
		} else if !ok {
			keyless[c.name] = fmt.Sprintf("its CA %s has no key here (%s): renew it where that key is", c.name, c.keyFile)
			continue
		}
		ca, err := loadCA(c.certFile, c.keyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("pki: %s: %w", c.name, err)
		}
		cas[c.name] = ca
	}
	var refused []string
	for _, l := range leaves {
		if !wanted(l) {
			continue
		}
		if why, ok := keyless[l.ca]; ok {
			if len(names) > 0 {
				refused = append(refused, l.name+": "+why)
			} else {
				skipped = append(skipped, Skipped{Name: l.name, Why: why})
			}
			continue
		}
		ca := cas[l.ca]
		if ca == nil {
			return renewed, skipped, fmt.Errorf("pki: %s: its CA %s is missing", l.name, l.ca)
		}
		if err := renewLeaf(ca, l.spec.certFile, l.spec.keyFile, now); err != nil {
			return renewed, skipped, fmt.Errorf("pki: %s: %w", l.name, err)
		}
		renewed = append(renewed, l.name)
	}
	if len(refused) > 0 {
		return renewed, skipped, fmt.Errorf("pki: not renewed: %s", strings.Join(refused, "; "))
	}
	return renewed, skipped, nil
}

// renewLeaf signs again the certificate in certFile for the key in keyFile.
func renewLeaf(ca *authority, certFile, keyFile string, now time.Time) error {
	cert, err := readCert(certFile)
	if err != nil {
		return err
	}
	key, err := readPrivateKey(keyFile)
	if err != nil {
		return fmt.Errorf("%w; run gcp pki init to issue a new key and certificate", err)
	}
	if !publicKeysEqual(key.Public(), cert.PublicKey) {
		return errors.New("the key does not belong to the certificate; run gcp pki init to issue a certificate for the key")
	}
	spec := leafSpec{
		commonName:   cert.Subject.CommonName,
		organization: cert.Subject.Organization,
		usages:       cert.ExtKeyUsage,
		dnsNames:     cert.DNSNames,
		ips:          cert.IPAddresses,
	}
	certPEM, err := ca.sign(spec, key.Public(), leafValidity, now)
	if err != nil {
		return err
	}
	return writeFileAtomic(certFile, certPEM, 0o644)
}
