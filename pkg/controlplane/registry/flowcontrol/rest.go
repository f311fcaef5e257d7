// Package flowcontrol serves flowcontrol.apiserver.k8s.io/v1: the
// FlowSchemas and PriorityLevelConfigurations that configure API Priority
// and Fairness. Package ensurer keeps the bootstrap configuration.
package flowcontrol

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol/defaults"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol/flowschema"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol/prioritylevelconfiguration"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is the flowcontrol.apiserver.k8s.io group.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns flowcontrol.apiserver.k8s.io.
func (APIGroup) GroupName() string { return flowcontrolv1.GroupName }

// DiscoveryPriorities implements registry.DiscoveryPrioritizer with
// kube-apiserver's priorities for the group.
func (APIGroup) DiscoveryPriorities() map[string]registry.DiscoveryPriority {
	return map[string]registry.DiscoveryPriority{
		"v1": {Group: 16100, Version: 21},
	}
}

// InstallScheme registers the v1 types and their defaults.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, flowcontrolv1.SchemeGroupVersion,
		&flowcontrolv1.FlowSchema{}, &flowcontrolv1.FlowSchemaList{},
		&flowcontrolv1.PriorityLevelConfiguration{}, &flowcontrolv1.PriorityLevelConfigurationList{},
	)
	scheme.AddTypeDefaultingFunc(&flowcontrolv1.FlowSchema{}, func(obj interface{}) {
		defaults.FlowSchema(obj.(*flowcontrolv1.FlowSchema))
	})
	scheme.AddTypeDefaultingFunc(&flowcontrolv1.PriorityLevelConfiguration{}, func(obj interface{}) {
		defaults.PriorityLevelConfiguration(obj.(*flowcontrolv1.PriorityLevelConfiguration))
	})
	return nil
}

// NewRESTStorage builds the storage of flowschemas and
// prioritylevelconfigurations with their status subresources.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(flowcontrolv1.GroupName)
	fs, err := flowschema.NewStorage(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	pl, err := prioritylevelconfiguration.NewStorage(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	enabled := opts.Enabled(&info, flowcontrolv1.SchemeGroupVersion, map[string]rest.Storage{
		"flowschemas":                        fs.FlowSchema,
		"flowschemas/status":                 fs.Status,
		"prioritylevelconfigurations":        pl.PriorityLevelConfiguration,
		"prioritylevelconfigurations/status": pl.Status,
	})
	return info, enabled, nil
}
