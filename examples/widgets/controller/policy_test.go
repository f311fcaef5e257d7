package controller

import (
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
)

func TestPolicy(t *testing.T) {
	p := Policy()
	if len(p.ClusterRoles) != 1 || p.ClusterRoles[0].Name != bootstrappolicy.ControllerRolePrefix+ServiceAccount || len(p.ClusterRoles[0].Rules) != 3 {
		t.Fatalf("cluster roles %+v, want system:controller:%s with 3 rules", p.ClusterRoles, ServiceAccount)
	}
	if len(p.ClusterRoleBindings) != 1 || len(p.ClusterRoleBindings[0].Subjects) != 1 ||
		p.ClusterRoleBindings[0].Subjects[0].Name != ServiceAccount || p.ClusterRoleBindings[0].Subjects[0].Namespace != "kube-system" {
		t.Fatalf("bindings %+v, want one to kube-system/%s", p.ClusterRoleBindings, ServiceAccount)
	}
}
