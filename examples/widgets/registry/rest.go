// Package registry serves widgets.example.dev/v1 in a gcp server: widgets
// (short name wd) and their status subresource, stored in etcd as JSON.
package registry

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"

	v1 "example.dev/widgets/apis/widgets/v1"
)

// APIGroup is the widgets.example.dev group.
type APIGroup struct{}

var (
	_ registry.APIGroup          = APIGroup{}
	_ registry.StorageMediaTyper = APIGroup{}
)

// GroupName returns widgets.example.dev.
func (APIGroup) GroupName() string { return v1.GroupName }

// InstallScheme registers the v1 types, as their own internal version, and
// the Widget defaults (spec.color blue).
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, v1.SchemeGroupVersion, &v1.Widget{}, &v1.WidgetList{})
	scheme.AddTypeDefaultingFunc(&v1.Widget{}, func(obj any) { v1.SetDefaults(obj.(*v1.Widget)) })
	scheme.AddTypeDefaultingFunc(&v1.WidgetList{}, func(obj any) {
		list := obj.(*v1.WidgetList)
		for i := range list.Items {
			v1.SetDefaults(&list.Items[i])
		}
	})
	return scheme.SetVersionPriority(v1.SchemeGroupVersion)
}

// NewRESTStorage builds the storage of widgets and widgets/status when
// --runtime-config enables them (they are on by default).
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(v1.GroupName)
	if !opts.ResourceConfig.ResourceEnabled(v1.SchemeGroupVersion.WithResource("widgets")) {
		return info, false, nil
	}
	storage, err := NewStorage(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	enabled := opts.Enabled(&info, v1.SchemeGroupVersion, map[string]rest.Storage{
		"widgets":        storage.Widget,
		"widgets/status": storage.Status,
	})
	return info, enabled, nil
}

// StorageMediaType returns JSON: the types have no protobuf marshalling.
func (APIGroup) StorageMediaType() string { return runtime.ContentTypeJSON }
