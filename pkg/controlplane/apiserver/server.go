package apiserver

import (
	"context"
	"fmt"
	"net/http"

	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apimachinery/pkg/runtime"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/notfoundhandler"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	// client-go's metrics (rest_client_*, workqueue_*, leader election,
	// informers' FIFOs) in the server's /metrics, as kube-apiserver and
	// kube-controller-manager serve them.
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	"k8s.io/klog/v2"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/workarounds"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/crdopenapi"
	"github.com/gcp-project/gcp/pkg/controlplane/crdshare"
	"github.com/gcp-project/gcp/pkg/controlplane/lazyopenapi"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/version"
)

// CompletedConfig is a Config after Complete; only Complete makes one.
type CompletedConfig struct {
	*completedConfig
}

type completedConfig struct {
	Config        *Config
	Generic       genericapiserver.CompletedConfig
	APIExtensions *apiextensionsapiserver.CompletedConfig
	Aggregator    *aggregatorapiserver.CompletedConfig
}

// Complete fills in the remaining defaults of every server's config.
func (c *Config) Complete() CompletedConfig {
	cc := &completedConfig{Config: c, Generic: c.Generic.Complete(c.Informers)}
	if c.APIExtensions != nil {
		x := c.APIExtensions.Complete()
		cc.APIExtensions = &x
	}
	if c.Aggregator != nil {
		a := c.Aggregator.Complete()
		cc.Aggregator = &a
	}
	return CompletedConfig{cc}
}

// Server is the assembled delegation chain:
// aggregator -> native APIs -> apiextensions -> not found.
type Server struct {
	// Native serves the native API groups.
	Native *genericapiserver.GenericAPIServer
	// APIExtensions is nil when CRDs are disabled.
	APIExtensions *apiextensionsapiserver.CustomResourceDefinitions
	// Aggregator is nil when aggregation is disabled.
	Aggregator *aggregatorapiserver.APIAggregator

	// storages is what New built, destroyed if PrepareRun fails.
	storages *workarounds.StorageTracker
	// certificates are the files gcp_certificate_expiration_timestamp_seconds
	// reports on while the server runs.
	certificates []certificateFile
	// informerName is released when the server stops (Config.informerName).
	informerName *cache.InformerName
}

// New builds the delegation chain, innermost first. If it fails, it
// destroys the storage it built (workarounds/failedstart.go).
func (c CompletedConfig) New() (*Server, error) {
	storages := c.trackStorage()
	s, err := c.new()
	if err != nil {
		storages.Destroy()
		return nil, err
	}
	s.storages = storages
	s.certificates = c.certificateFiles()
	s.informerName = c.Config.informerName
	return s, nil
}

func (c CompletedConfig) new() (*Server, error) {
	s := &Server{}

	// 1. Not found: the end of the chain, a 404 that knows whether discovery
	//    is still being assembled (then 503, so clients retry).
	var delegate genericapiserver.DelegationTarget = genericapiserver.NewEmptyDelegateWithCustomHandler(
		notfoundhandler.New(c.Generic.Serializer, genericapifilters.NoMuxAndDiscoveryIncompleteKey))

	// 2. apiextensions: CRDs and custom resources.
	if c.APIExtensions != nil {
		x, err := c.APIExtensions.New(delegate)
		if err != nil {
			return nil, fmt.Errorf("apiextensions server: %w", err)
		}
		s.APIExtensions = x
		// The CRDs the apiextensions server holds share their identical
		// schema subtrees (crdshare).
		crds := x.Informers.Apiextensions().V1().CustomResourceDefinitions().Informer()
		if err := crds.SetTransform(crdshare.New(crds.GetStore().List).Transform); err != nil {
			return nil, fmt.Errorf("apiextensions server: %w", err)
		}
		// Requests refused because a CRD's storage was replaced under
		// them are served again (workarounds/crdstorageretry.go).
		delegate = workarounds.NewWithCRDStorageRetry(x.GenericAPIServer)
		// Lists and watches of empty kinds cost their CRDs nothing.
		if delegate, err = c.withColdCRs(delegate, x); err != nil {
			return nil, err
		}
	}

	// 3. The native API groups.
	native, err := c.Generic.New("gcp-apiserver", delegate)
	if err != nil {
		return nil, fmt.Errorf("native server: %w", err)
	}
	if err := c.installAPIGroups(native); err != nil {
		return nil, fmt.Errorf("native server: %w", err)
	}
	if err := c.addNativeHooks(native); err != nil {
		return nil, fmt.Errorf("native server: %w", err)
	}
	if c.Generic.OpenAPIConfig != nil {
		lazyopenapi.InstallV2(native.Handler.GoRestfulContainer, c.Generic.OpenAPIConfig, native.Handler.NonGoRestfulMux)
	}
	if c.Generic.OpenAPIV3Config != nil {
		lazyopenapi.InstallV3(native.Handler.GoRestfulContainer, c.Generic.OpenAPIV3Config, native.Handler.NonGoRestfulMux)
	}
	if t := c.Config.ServiceAccountTokens; t != nil {
		// OIDC discovery of the service account issuer; RBAC grants it to
		// system:service-account-issuer-discovery.
		for path, h := range t.Discovery {
			native.Handler.NonGoRestfulMux.Handle(path, h)
		}
	}
	s.Native = native

	// 4. The aggregator in front: APIServices, and discovery for everything.
	if c.Aggregator != nil {
		agg, err := c.newAggregator(native, s.APIExtensions)
		if err != nil {
			return nil, fmt.Errorf("aggregator: %w", err)
		}
		s.Aggregator = agg
	}
	return s, nil
}

func (c CompletedConfig) installAPIGroups(native *genericapiserver.GenericAPIServer) error {
	opts := c.Config.storageOptions()
	var groups []*genericapiserver.APIGroupInfo
	for _, g := range c.Config.Composition.APIGroups {
		info, enabled, err := g.NewRESTStorage(opts)
		if err != nil {
			return fmt.Errorf("API group %q: %w", g.GroupName(), err)
		}
		if !enabled {
			continue
		}
		if mt, ok := g.(registry.StorageMediaTyper); ok && mt.StorageMediaType() != runtime.ContentTypeProtobuf {
			// Types without protobuf marshalling would answer a client that
			// prefers protobuf (every controller does) with 406.
			info.NegotiatedSerializer = withoutProtobuf{info.NegotiatedSerializer}
		}
		if g.GroupName() == "" {
			if err := native.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &info); err != nil {
				return fmt.Errorf("core API group: %w", err)
			}
			continue
		}
		groups = append(groups, &info)
	}
	if len(groups) == 0 {
		return nil
	}
	return native.InstallAPIGroups(groups...)
}

func (c CompletedConfig) addNativeHooks(native *genericapiserver.GenericAPIServer) error {
	informers := c.Config.Informers
	hooks := map[string]genericapiserver.PostStartHookFunc{
		"start-gcp-informers": func(ctx genericapiserver.PostStartHookContext) error {
			informers.Start(ctx.Done())
			return nil
		},
	}
	if r := c.Config.ServiceResolver; r != nil {
		hooks["start-service-resolver"] = func(ctx genericapiserver.PostStartHookContext) error {
			r.Start(ctx)
			return nil
		}
	}
	if c.Config.serves(configMaps) {
		hooks[authenticationInfoHookName] = publishAuthenticationInfo(c.Config.Options.Authentication)
	}
	// Each API server keeps an identity Lease in kube-system, as
	// kube-apiserver does, when Leases are served.
	if c.Config.serves(identityLeaseResources...) && c.Config.Generic.SecureServing != nil {
		o := c.Config.Options
		address := c.Config.Generic.SecureServing.Listener.Addr().String()
		hooks[identityHookName] = identityLeaseHook(address, o.IdentityLeaseDuration, o.IdentityLeaseRenewInterval)
		hooks[identityGCHookName] = identityLeaseGCHook(o.IdentityLeaseDuration)
	}
	if c.Config.serves(rbacPolicyResources...) {
		hooks[bootstrappolicy.HookName] = bootstrappolicy.NewHook(c.Config.Composition.Policy)
	}
	for name, hook := range c.Config.Composition.PostStartHooks {
		if _, ok := hooks[name]; ok {
			return fmt.Errorf("post-start hook %q: the server has one of that name", name)
		}
		hooks[name] = hook
	}
	for name, hook := range hooks {
		if err := native.AddPostStartHook(name, stoppingIsNoFailure(name, hook)); err != nil {
			return err
		}
	}
	return nil
}

// stoppingIsNoFailure returns hook, except that an error it returns once
// the server is stopping is logged instead: k8s.io/apiserver ends the
// process (klog.Fatalf) when a post-start hook fails, and a hook cut
// short by a stop (a retry loop whose context ends) has not failed. A
// test server or a library user that stops a server before its hooks are
// done would otherwise lose its whole process.
func stoppingIsNoFailure(name string, hook genericapiserver.PostStartHookFunc) genericapiserver.PostStartHookFunc {
	return func(ctx genericapiserver.PostStartHookContext) error {
		err := hook(ctx)
		if err != nil && ctx.Err() != nil {
			klog.V(2).InfoS("Post-start hook stopped with the server", "hook", name, "err", err)
			return nil
		}
		return err
	}
}

// PreparedServer is a Server after PrepareRun; only it can Run.
type PreparedServer struct {
	run func(ctx context.Context) error
	// Handler is the outermost handler (for in-process tests).
	Handler http.Handler
	// readyz is the loopback client Start asks /readyz with.
	readyz rest.Interface
}

// PrepareRun installs the health, OpenAPI and discovery endpoints. If it
// fails, it destroys the server's storage; once it succeeds, the server
// destroys its storage when it stops.
func (s *Server) PrepareRun() (*PreparedServer, error) {
	var prepared *PreparedServer
	var err error
	onOwnStack(func() { prepared, err = s.prepareRun() })
	if err != nil {
		s.storages.Destroy()
		return nil, err
	}
	s.storages.Release()
	return prepared, nil
}

// onOwnStack runs f on a goroutine of its own and waits for it; a panic in
// f panics the caller. The new goroutine's stack has none of the caller's
// frames, which makes PrepareRun cheaper: k8s.io/apiserver's
// PathRecorderMux records a debug.Stack() for every path registered (to
// name both callers of a duplicate), and PrepareRun registers about 200,
// /healthz, /livez, /readyz and one path per check for each of the three
// servers. A stack's text costs per frame, and more than once when it
// outgrows debug.Stack's first buffer (1 KiB, doubled until it fits):
// without the frames of gcp start's command or of a test, PrepareRun took
// 10–18 ms less of a test server's start (docs/performance.md).
func onOwnStack(f func()) {
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	if p := <-done; p != nil {
		panic(p)
	}
}

func (s *Server) prepareRun() (*PreparedServer, error) {
	var prepared *PreparedServer
	if s.Aggregator != nil {
		p, err := s.Aggregator.PrepareRun()
		if err != nil {
			return nil, err
		}
		prepared = &PreparedServer{run: p.Run, Handler: s.Aggregator.GenericAPIServer.Handler}
	} else {
		p := s.Native.PrepareRun()
		prepared = &PreparedServer{run: p.RunWithContext, Handler: s.Native.Handler}
	}
	crdOpenAPI, err := s.serveCRDOpenAPI()
	if err != nil {
		return nil, err
	}
	loopback, err := discovery.NewDiscoveryClientForConfig(s.Native.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("the readiness check's client: %w", err)
	}
	prepared.readyz = loopback.RESTClient()
	run, certificates, informerName := prepared.run, s.certificates, s.informerName
	prepared.run = func(ctx context.Context) error {
		defer informerName.Release()
		defer certificateExpiration.watch(certificates)()
		if crdOpenAPI != nil {
			go crdOpenAPI.Prebuild(ctx)
		}
		return run(ctx)
	}
	return prepared, nil
}

// serveCRDOpenAPI makes the apiextensions server build the OpenAPI v3
// document of a custom resource's group-version when it is asked for, or
// ahead of that once CRDs are quiet (crdopenapi), instead of building and
// keeping one for every CRD as objects. It runs
// after PrepareRun installed /openapi/v3 and before the post-start hooks:
// with its service unset, the apiextensions server does not start its own
// OpenAPI v3 controller. (OpenAPI v2 is left as it is: its controller
// builds a CRD's part of the spec only when /openapi/v2 is read.)
func (s *Server) serveCRDOpenAPI() (*crdopenapi.Handler, error) {
	if s.APIExtensions == nil || s.APIExtensions.GenericAPIServer.OpenAPIV3VersionedService == nil {
		return nil, nil
	}
	x := s.APIExtensions.GenericAPIServer
	h, err := crdopenapi.New(x.OpenAPIV3VersionedService,
		s.APIExtensions.Informers.Apiextensions().V1().CustomResourceDefinitions().Lister(), version.Get().GitVersion)
	if err != nil {
		return nil, fmt.Errorf("apiextensions server: %w", err)
	}
	x.OpenAPIV3VersionedService = nil
	h.Install(x.Handler.NonGoRestfulMux)
	// Documents are built ahead of their first request once CRDs stop
	// changing (crdopenapi.Handler.Prebuild, which the server's run starts).
	if _, err := s.APIExtensions.Informers.Apiextensions().V1().CustomResourceDefinitions().Informer().AddEventHandler(h.EventHandler()); err != nil {
		return nil, fmt.Errorf("apiextensions server: %w", err)
	}
	return h, nil
}

// Run serves until ctx is done, then shuts down gracefully; Start does the
// same in a goroutine and returns a handle.
func (p *PreparedServer) Run(ctx context.Context) error {
	return p.run(ctx)
}

// withoutProtobuf offers a group's media types except protobuf.
type withoutProtobuf struct {
	runtime.NegotiatedSerializer
}

// SupportedMediaTypes returns the serializer's media types but protobuf.
func (w withoutProtobuf) SupportedMediaTypes() []runtime.SerializerInfo {
	var out []runtime.SerializerInfo
	for _, info := range w.NegotiatedSerializer.SupportedMediaTypes() {
		if info.MediaType != runtime.ContentTypeProtobuf {
			out = append(out, info)
		}
	}
	return out
}
