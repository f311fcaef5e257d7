package apiserver

import (
	"fmt"
	"net/http"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/coldcrs"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// withColdCRs puts coldcrs in front of the apiextensions server's handler
// (delegate, which serves x): lists and watches of custom resources that
// have no objects are answered without building their CRDs' serving
// structures. Its etcd client is closed when the server stops.
func (c CompletedConfig) withColdCRs(delegate genericapiserver.DelegationTarget, x *apiextensionsapiserver.CustomResourceDefinitions) (genericapiserver.DelegationTarget, error) {
	o := c.Config.Options
	crds := x.Informers.Apiextensions().V1().CustomResourceDefinitions()
	h := coldcrs.New(delegate.UnprotectedHandler(), coldcrs.Config{
		CRDs:              crds.Lister(),
		Etcd:              c.newColdCRsEtcdClient,
		Prefix:            o.Etcd.StorageConfig.Prefix,
		MinRequestTimeout: time.Duration(c.Generic.MinRequestTimeout) * time.Second,
		RequestTimeout:    o.EtcdRequestTimeout,
	})
	if _, err := crds.Informer().AddEventHandler(h.EventHandler()); err != nil {
		return nil, fmt.Errorf("apiextensions server: cold custom resources: %w", err)
	}
	x.GenericAPIServer.AddPostStartHookOrDie("gcp-cold-crs", func(ctx genericapiserver.PostStartHookContext) error {
		go func() {
			<-ctx.Done()
			_ = h.Close()
		}()
		return nil
	})
	return withHandler{DelegationTarget: delegate, handler: h}, nil
}

// newColdCRsEtcdClient is the one etcd client coldcrs reads through: an
// in-process one in gcp start, else one connection to the etcd servers.
func (c CompletedConfig) newColdCRsEtcdClient() (*clientv3.Client, error) {
	o := c.Config.Options
	if o.NewEtcdClient != nil {
		return o.NewEtcdClient()
	}
	t := o.Etcd.StorageConfig.Transport
	cfg, err := etcd.ClientConfig(t.ServerList, t.CertFile, t.KeyFile, t.TrustedCAFile, o.EtcdRequestTimeout)
	if err != nil {
		return nil, err
	}
	return clientv3.New(cfg)
}

// withHandler is a delegate whose handler is wrapped.
type withHandler struct {
	genericapiserver.DelegationTarget
	handler http.Handler
}

func (w withHandler) UnprotectedHandler() http.Handler { return w.handler }
