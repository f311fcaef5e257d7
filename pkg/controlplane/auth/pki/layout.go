package pki

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Names of the CAs, as `gcp pki check` lists them: their paths under the
// directory without the extension, as kubeadm names them.
const (
	clusterCAName    = "ca"
	frontProxyCAName = "front-proxy-ca"
	etcdCAName       = "etcd/ca"
)

// caFiles is one CA of the layout.
type caFiles struct {
	name, commonName  string
	certFile, keyFile string
}

// leaf is one leaf certificate of the layout, named as `gcp pki check`
// lists it, with the name of the CA that signs it and, where Ensure issues
// it, what it must say.
type leaf struct {
	name string
	ca   string
	spec leafSpec
}

// authorities returns the CAs of the layout, whether they exist or not.
func (f *Files) authorities() []caFiles {
	return []caFiles{
		{clusterCAName, caCommonName, f.CACert, f.CAKey},
		{frontProxyCAName, frontProxyCACommonName, f.FrontProxyCACert, f.FrontProxyCAKey},
		{etcdCAName, etcdCACommonName, f.EtcdCACert, f.EtcdCAKey},
	}
}

// existingLeaves returns the leaf certificates of the layout whose
// certificate file exists, with their files (not their specs): the fixed
// ones, then each etcd member's found in etcd/<name>/, by name.
func (f *Files) existingLeaves() ([]leaf, error) {
	candidates := []leaf{
		{name: "apiserver", ca: clusterCAName, spec: leafSpec{certFile: f.ServingCert, keyFile: f.ServingKey}},
		{name: "admin", ca: clusterCAName, spec: leafSpec{certFile: f.AdminCert, keyFile: f.AdminKey}},
		{name: "controllers", ca: clusterCAName, spec: leafSpec{certFile: f.ControllersCert, keyFile: f.ControllersKey}},
		{name: "front-proxy-client", ca: frontProxyCAName, spec: leafSpec{certFile: f.FrontProxyClientCert, keyFile: f.FrontProxyClientKey}},
		{name: "apiserver-etcd-client", ca: etcdCAName, spec: leafSpec{certFile: f.EtcdClientCert, keyFile: f.EtcdClientKey}},
	}
	members, err := f.etcdMemberNames()
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		mf := f.EtcdMember(m)
		candidates = append(candidates,
			leaf{name: "etcd/" + m + "/server", ca: etcdCAName, spec: leafSpec{certFile: mf.ServerCert, keyFile: mf.ServerKey}},
			leaf{name: "etcd/" + m + "/peer", ca: etcdCAName, spec: leafSpec{certFile: mf.PeerCert, keyFile: mf.PeerKey}})
	}
	var out []leaf
	for _, l := range candidates {
		ok, err := exists(l.spec.certFile)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, l)
		}
	}
	return out, nil
}

// etcdMemberNames lists the members that have a directory under etcd/.
func (f *Files) etcdMemberNames() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(f.Dir, "etcd"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}
