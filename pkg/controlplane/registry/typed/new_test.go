package typed

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
)

func TestNewStrategyAndResource(t *testing.T) {
	invalid := field.ErrorList{field.Required(field.NewPath("data"), "")}
	s := NewStrategy(nil, NamespaceScoped,
		func(*corev1.ConfigMap) field.ErrorList { return invalid },
		func(_, _ *corev1.ConfigMap) field.ErrorList { return nil })
	if !s.NamespaceScoped() || s.NameGenerator != names.SimpleNameGenerator || s.UnconditionalUpdate {
		t.Errorf("strategy %+v", s)
	}
	if errs := s.Validate(t.Context(), &corev1.ConfigMap{}); len(errs) != 1 {
		t.Errorf("Validate: %v", errs)
	}
	if errs := s.ValidateUpdate(t.Context(), &corev1.ConfigMap{}, &corev1.ConfigMap{}); len(errs) != 0 {
		t.Errorf("ValidateUpdate: %v", errs)
	}
	if NewStrategy[*corev1.Namespace](nil, ClusterScoped, nil, nil).NamespaceScoped() {
		t.Error("a cluster-scoped strategy is namespaced")
	}
	r := NewResource[corev1.ConfigMap, corev1.ConfigMapList](corev1.Resource("configmaps"), "configmap", s, nil)
	if r.New() == nil || r.NewList() == nil || r.New() == r.New() || r.Strategy != s || r.Singular != "configmap" {
		t.Errorf("resource %+v", r)
	}
}
