// Package quota is what the resource quota controller and the ResourceQuota
// admission plugin agree on: which resources quotas never count, and the
// core resources also counted under their plain names ("configmaps" as well
// as "count/configmaps"). Every other resource gets an object count
// evaluator when first seen.
package quota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
)

// legacyObjectCounts are the core resources that quotas also count under
// their plain name, as upstream has since before count/<resource>.
var legacyObjectCounts = map[schema.GroupVersionResource]corev1.ResourceName{
	corev1.SchemeGroupVersion.WithResource("configmaps"):     corev1.ResourceConfigMaps,
	corev1.SchemeGroupVersion.WithResource("secrets"):        corev1.ResourceSecrets,
	corev1.SchemeGroupVersion.WithResource("resourcequotas"): corev1.ResourceQuotas,
}

// LegacyEvaluators count the core resources under both names. f lists a
// resource's objects for usage totals; the admission plugin, which only
// counts the object in the request, passes nil.
func LegacyEvaluators(f quota.ListerForResourceFunc) []quota.Evaluator {
	var out []quota.Evaluator
	for gvr, alias := range legacyObjectCounts {
		var list generic.ListFuncByNamespace
		if f != nil {
			list = generic.ListResourceUsingListerFunc(f, gvr)
		}
		out = append(out, generic.NewObjectCountEvaluator(gvr.GroupResource(), list, alias))
	}
	return out
}

// ignored are resources quotas never count, as upstream decided: requests
// that store nothing, and events, which are many and short-lived and were
// never under quota.
var ignored = []schema.GroupResource{
	{Group: "", Resource: "events"},
	{Group: "events.k8s.io", Resource: "events"},
	{Group: "authentication.k8s.io", Resource: "tokenreviews"},
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
}

// IgnoredResources returns the resources quotas never count.
func IgnoredResources() map[schema.GroupResource]struct{} {
	out := make(map[schema.GroupResource]struct{}, len(ignored))
	for _, gr := range ignored {
		out[gr] = struct{}{}
	}
	return out
}

// AdmissionConfiguration is the quota configuration of the ResourceQuota
// admission plugin.
func AdmissionConfiguration() quota.Configuration {
	return generic.NewConfiguration(LegacyEvaluators(nil), IgnoredResources())
}
