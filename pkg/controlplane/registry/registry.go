// Package registry defines how a group of native resources plugs into the gcp
// API server: an APIGroup installs its types into the server's scheme and
// builds the REST storage for the versions it serves.
package registry

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
)

// APIGroup is one API group served by the native (generic core) server.
// The core group ("") is installed under /api, every other group under /apis.
type APIGroup interface {
	// GroupName is the API group, "" for the legacy core group.
	GroupName() string
	// InstallScheme registers the group's types, defaulting, conversion and
	// field label functions into scheme.
	InstallScheme(scheme *runtime.Scheme) error
	// NewRESTStorage builds the storage of every enabled resource of the group.
	// It returns enabled=false when no version of the group is enabled.
	NewRESTStorage(opts StorageOptions) (info genericapiserver.APIGroupInfo, enabled bool, err error)
}

// StorageOptions is what an APIGroup needs to build its storage.
type StorageOptions struct {
	// Scheme holds every native type; APIGroupInfo must reference it.
	Scheme *runtime.Scheme
	// Codecs is the codec factory over Scheme.
	Codecs serializer.CodecFactory
	// ParameterCodec decodes query parameters into options types.
	ParameterCodec runtime.ParameterCodec
	// RESTOptionsGetter gives each resource its etcd storage and watch cache settings.
	RESTOptionsGetter generic.RESTOptionsGetter
	// ResourceConfig says which group/versions and resources are enabled (--runtime-config).
	ResourceConfig serverstorage.APIResourceConfigSource
	// Auth is the server's authentication and authorization.
	Auth Auth
	// RESTMapper maps kinds to resources across everything the server
	// serves, custom resources and aggregated APIs included, through
	// discovery on the loopback client; it is only usable once the server
	// runs (from request handlers, not at construction).
	RESTMapper meta.ResettableRESTMapper
	// EventTTL is how long events are kept (--event-ttl); zero means the
	// event registry's default.
	EventTTL time.Duration
}

// NewAPIGroupInfo returns the APIGroupInfo for group with the options'
// scheme and codecs; callers fill in VersionedResourcesStorageMap.
func (o StorageOptions) NewAPIGroupInfo(group string) genericapiserver.APIGroupInfo {
	return genericapiserver.NewDefaultAPIGroupInfo(group, o.Scheme, o.ParameterCodec, o.Codecs)
}

// Enabled returns the storage of gv's resources that the resource config
// enables (--runtime-config), subresources following their resource, and
// adds it to info. It reports whether any resource is left.
func (o StorageOptions) Enabled(info *genericapiserver.APIGroupInfo, gv schema.GroupVersion, storage map[string]rest.Storage) bool {
	enabled := map[string]rest.Storage{}
	for name, s := range storage {
		resource, _, _ := strings.Cut(name, "/")
		if o.ResourceConfig.ResourceEnabled(gv.WithResource(resource)) {
			enabled[name] = s
		}
	}
	if len(enabled) == 0 {
		return false
	}
	info.VersionedResourcesStorageMap[gv.Version] = enabled
	return true
}

// DiscoveryPriority is where a group version sits in discovery, as
// kube-aggregator's APIService priorities say: groups by descending Group
// (GroupPriorityMinimum), a group's versions by descending Version
// (VersionPriority).
type DiscoveryPriority struct{ Group, Version int32 }

// DefaultDiscoveryPriority is the priority of a group version whose
// APIGroup does not say: after every group gcp serves, before CRD groups
// (1000).
var DefaultDiscoveryPriority = DiscoveryPriority{Group: 15000, Version: 15}

// DiscoveryPrioritizer is implemented by an APIGroup that gives its
// versions a discovery priority (kube-apiserver's for the built-in groups);
// the others get DefaultDiscoveryPriority.
type DiscoveryPrioritizer interface {
	// DiscoveryPriorities returns the priority of each version the group
	// may serve, by version.
	DiscoveryPriorities() map[string]DiscoveryPriority
}

// DiscoveryPriorities returns the priorities groups give their versions.
func DiscoveryPriorities(groups []APIGroup) map[schema.GroupVersion]DiscoveryPriority {
	out := map[schema.GroupVersion]DiscoveryPriority{}
	for _, g := range groups {
		p, ok := g.(DiscoveryPrioritizer)
		if !ok {
			continue
		}
		for version, priority := range p.DiscoveryPriorities() {
			out[schema.GroupVersion{Group: g.GroupName(), Version: version}] = priority
		}
	}
	return out
}

// ReadByServer is implemented by an APIGroup that the server itself
// reads and cannot run without, as the RBAC authorizer reads its policy
// from rbac.authorization.k8s.io: --runtime-config may not turn off any
// of its stable versions or resources. A group whose absence only turns a
// feature off need not implement it: the server's own features run only
// while the resources they need are served (apiserver's serves).
type ReadByServer interface {
	// ReadBy names what reads the group, for the error that refuses
	// turning it off.
	ReadBy() string
}

// StorageMediaTyper is implemented by an APIGroup that says how its
// objects are encoded in etcd: runtime.ContentTypeJSON for types without
// protobuf marshalling (clients then cannot negotiate protobuf for the
// group either; they get JSON), runtime.ContentTypeProtobuf otherwise.
// Groups that do not implement it are stored as the server's
// --storage-media-type says (protobuf by default).
type StorageMediaTyper interface {
	StorageMediaType() string
}
