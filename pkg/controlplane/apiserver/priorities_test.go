package apiserver

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/apiserverinternal"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/authentication"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/authorization"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/certificates"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/coordination"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/events"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/rbac"
)

// TestDiscoveryPriorities: gcp's groups give the discovery priorities
// kube-apiserver gives them (the table the aggregator had before the
// groups declared their own), so discovery lists them in the same order;
// a group that gives none comes after them and before CRD groups.
func TestDiscoveryPriorities(t *testing.T) {
	groups := []registry.APIGroup{core.APIGroup{}, events.APIGroup{}, rbac.APIGroup{}, authentication.APIGroup{},
		authorization.APIGroup{}, coordination.APIGroup{}, admissionregistration.APIGroup{}, flowcontrol.APIGroup{},
		certificates.APIGroup{}, apiserverinternal.APIGroup{}, noPriority{}}
	want := map[schema.GroupVersion]apiServicePriority{
		{Group: "", Version: "v1"}:                                {18000, 1},
		{Group: "events.k8s.io", Version: "v1"}:                   {17750, 15},
		{Group: "authentication.k8s.io", Version: "v1"}:           {17700, 15},
		{Group: "authorization.k8s.io", Version: "v1"}:            {17600, 15},
		{Group: "certificates.k8s.io", Version: "v1"}:             {17300, 15},
		{Group: "rbac.authorization.k8s.io", Version: "v1"}:       {17000, 15},
		{Group: "apiextensions.k8s.io", Version: "v1"}:            {16700, 15},
		{Group: "admissionregistration.k8s.io", Version: "v1"}:    {16700, 15},
		{Group: "coordination.k8s.io", Version: "v1"}:             {16500, 15},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}:    {16100, 21},
		{Group: "coordination.k8s.io", Version: "v1beta1"}:        {16500, 13},
		{Group: "internal.apiserver.k8s.io", Version: "v1alpha1"}: {16000, 9},
	}
	if got := priorities(groups); !maps.Equal(got, want) {
		t.Errorf("priorities:\n got %v\nwant %v", got, want)
	}
	if defaultPriority.group >= 16000 || defaultPriority.group <= crdGroupPriority.group {
		t.Errorf("default priority %v is not between gcp's groups and CRD groups (%v)", defaultPriority, crdGroupPriority)
	}
}

// noPriority is a consumer's group that gives no priority.
type noPriority struct{ registry.APIGroup }

func (noPriority) GroupName() string { return "widgets.example.dev" }
