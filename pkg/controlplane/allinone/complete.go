package allinone

import (
	"context"
	"errors"
	"net"
	"path"
	"path/filepath"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// completeAPIServer is the one step that derives the API server's options
// from the data dir: it serves on ln with the data dir's certificates,
// trusts its CAs, signs service account tokens with its key as the
// server's URL, stores in the embedded etcd (member, once started)
// through its socket's in-process clients, and keeps its audit policy and
// encryption config there. It checks the etcd database and the Secrets
// in it against that config, then completes and validates the options.
// etcdHealth says whether Start adds the etcd health checks itself
// (addEtcdChecks), which it does unless they are turned off.
func completeAPIServer(ctx context.Context, rb *rollback, o Options, d *dataDirPKI, ln net.Listener, comp composition.Composition,
	member *atomic.Pointer[etcd.Handle]) (completed options.CompletedOptions, etcdHealth bool, err error) {
	dataDir := filepath.Dir(d.dir)
	ao := o.APIServer
	ao.AddAdmissionPlugins(comp.AdmissionPlugins)
	ao.SecureServing.Listener = ln
	ao.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	ao.SecureServing.ServerCert.CertKey.CertFile = d.files.ServingCert
	ao.SecureServing.ServerCert.CertKey.KeyFile = d.files.ServingKey
	ao.Authentication.ClientCAFile = d.files.CACert
	ao.Authentication.RequestHeader.ClientCAFile = d.files.FrontProxyCACert
	ao.Authentication.RequestHeader.AllowedNames = []string{pki.FrontProxyClientUser}
	ao.ProxyClientCertFile = d.files.FrontProxyClientCert
	ao.ProxyClientKeyFile = d.files.FrontProxyClientKey
	// Service account tokens are issued by this server's URL, which is
	// also where their OIDC discovery document is served.
	ao.Authentication.ServiceAccounts.Issuers = []string{d.url}
	ao.Authentication.ServiceAccounts.SigningKeyFile = d.files.ServiceAccountKey
	ao.Authentication.ServiceAccounts.KeyFiles = []string{d.files.ServiceAccountPublicKey}

	ao.Etcd.StorageConfig.Transport.ServerList = []string{etcd.UnixSocketURL(EtcdSocket(dataDir))}
	ao.Etcd.EtcdServersOverrides = nil
	ao.NewEtcdClient = func() (*clientv3.Client, error) {
		if m := member.Load(); m != nil {
			return m.InProcessClient(), nil
		}
		return nil, errors.New("the embedded etcd is not running")
	}
	if ao.Audit.LogOptions.Path != "" && ao.Audit.PolicyFile == "" {
		rb.removeIfNew(filepath.Join(dataDir, AuditPolicyName))
		policy, err := ensureAuditPolicy(dataDir)
		if err != nil {
			return completed, false, err
		}
		ao.Audit.PolicyFile = policy
	}
	if o.SecretsEncryption {
		rb.removeIfNew(filepath.Join(d.dir, EncryptionConfigName))
		path, err := ensureEncryptionConfig(d.dir)
		if err != nil {
			return completed, false, err
		}
		ao.Etcd.EncryptionProviderConfigFilepath = path
	}
	// The etcd database, before anything logs: a corrupt one would crash
	// etcd's bbolt, and a Secret the server could not read would answer
	// 500, and so would every list of Secrets (a restore without the old
	// data dir's key, a key removed too early in a rotation).
	db := etcd.DatabasePath(EtcdDir(dataDir))
	if err := etcd.CheckDatabase(db); err != nil {
		return completed, false, restoreWith(err)
	}
	prefix := path.Join(ao.Etcd.StorageConfig.Prefix, "secrets") + "/"
	if err := checkSecrets(ctx, db, prefix, ao.Etcd.EncryptionProviderConfigFilepath, filepath.Join(d.dir, EncryptionConfigName)); err != nil {
		return completed, false, err
	}
	// The etcd health checks are added by Start, with clients that it
	// closes (addEtcdChecks), instead of by the etcd options. But the etcd
	// options add the KMS providers' health checks with them, and nothing
	// else can: with a KMS provider in the encryption config (an operator
	// may add one to pki/encryption-config.yaml), the options add both,
	// and a failed start may leave their etcd clients redialling.
	kms, err := usesKMS(ao.Etcd.EncryptionProviderConfigFilepath)
	if err != nil {
		return completed, false, err
	}
	if !kms {
		etcdHealth = !ao.Etcd.SkipHealthEndpoints
		ao.Etcd.SkipHealthEndpoints = true
	}
	if completed, err = ao.Complete(); err != nil {
		return completed, false, err
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return completed, false, utilerrors.NewAggregate(errs)
	}
	return completed, etcdHealth, nil
}
