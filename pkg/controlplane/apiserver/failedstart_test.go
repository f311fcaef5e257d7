package apiserver_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/layering"
)

// brokenGroup is an API group whose storage cannot be built, installed
// after groups whose storage was.
type brokenGroup struct{}

func (brokenGroup) GroupName() string                   { return "broken.example.dev" }
func (brokenGroup) InstallScheme(*runtime.Scheme) error { return nil }
func (brokenGroup) NewRESTStorage(registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	return genericapiserver.APIGroupInfo{}, false, errors.New("broken on purpose")
}

// TestNewDestroysStorageWhenItFails: a server that fails to build closes
// the etcd client of every storage it built before failing, as `gcp
// apiserver`, `gcp start` and the test server all need.
func TestNewDestroysStorageWhenItFails(t *testing.T) {
	t.Parallel()
	// A short path: unix socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "failedstart")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	member, err := etcd.Start(context.Background(), etcd.DefaultConfig(filepath.Join(dir, "etcd")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = member.Close() })
	<-member.Ready()

	o := options.NewOptions()
	o.Etcd.StorageConfig.Transport.ServerList = member.ClientURLs()
	o.Etcd.SkipHealthEndpoints = true
	var mu sync.Mutex
	var clients []*clientv3.Client
	o.NewEtcdClient = func() (*clientv3.Client, error) {
		c := member.InProcessClient()
		mu.Lock()
		defer mu.Unlock()
		clients = append(clients, c)
		return c, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	o.SecureServing.Listener = ln
	o.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	o.SecureServing.ServerCert.CertDirectory = filepath.Join(dir, "certs")
	if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, nil); err != nil {
		t.Fatal(err)
	}
	// Any certificate will do as the client CA.
	o.Authentication.ClientCAFile = o.SecureServing.ServerCert.CertKey.CertFile
	completed, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	comp, err := layering.Generic().With(layering.Layer{Name: "broken", APIGroups: []registry.APIGroup{brokenGroup{}}}).Compose()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := apiserver.NewConfig(completed, comp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Complete().New(); err == nil || !strings.Contains(err.Error(), "broken on purpose") {
		t.Fatalf("New with a broken group: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(clients) == 0 {
		t.Fatal("no storage was built before the broken group")
	}
	open := 0
	for _, c := range clients {
		if c.Ctx().Err() == nil {
			open++
		}
	}
	if open > 0 {
		t.Errorf("%d of the %d etcd clients of the storage built before the failure are still open", open, len(clients))
	}
}
