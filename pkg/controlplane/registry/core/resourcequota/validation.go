// Package resourcequota serves core/v1 resourcequotas and their status
// subresource, validated like upstream's ValidateResourceQuota*.
package resourcequota

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
)

// SetDefaults rounds every quantity of spec.hard, status.hard and
// status.used up to milli scale, as upstream's SetDefaults_ResourceList.
func SetDefaults(q *corev1.ResourceQuota) {
	for _, list := range []corev1.ResourceList{q.Spec.Hard, q.Status.Hard, q.Status.Used} {
		for name, value := range list {
			value.RoundUp(-3)
			list[name] = value
		}
	}
}

// Validate validates a new quota: a DNS subdomain name in a namespace,
// valid spec and status.
func Validate(q *corev1.ResourceQuota) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&q.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateSpec(&q.Spec, field.NewPath("spec"))...)
	errs = append(errs, validateStatus(&q.Status, field.NewPath("status"))...)
	return errs
}

// ValidateUpdate validates an update of the main resource: a valid spec
// whose scopes do not change.
func ValidateUpdate(q, old *corev1.ResourceQuota) field.ErrorList {
	errs := metavalidation.ValidateObjectMetaUpdate(&q.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateSpec(&q.Spec, field.NewPath("spec"))...)
	if !sets.New(q.Spec.Scopes...).Equal(sets.New(old.Spec.Scopes...)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "scopes"), q.Spec.Scopes, apimachineryvalidation.FieldImmutableErrorMsg))
	}
	return errs
}

// ValidateStatusUpdate validates an update through resourcequotas/status.
func ValidateStatusUpdate(q, old *corev1.ResourceQuota) field.ErrorList {
	errs := metavalidation.ValidateObjectMetaUpdate(&q.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if q.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	return append(errs, validateStatus(&q.Status, field.NewPath("status"))...)
}

// Warnings warns, as upstream, when spec.hard requests more cpu, memory,
// storage or ephemeral storage than it limits.
func Warnings(q *corev1.ResourceQuota) []string {
	var warnings []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceStorage, corev1.ResourceEphemeralStorage} {
		requestName := corev1.ResourceName("requests." + name)
		request, hasRequest := q.Spec.Hard[requestName]
		if !hasRequest && (name == corev1.ResourceCPU || name == corev1.ResourceMemory) {
			if request, hasRequest = q.Spec.Hard[name]; hasRequest {
				requestName = name
			}
		}
		limitName := corev1.ResourceName("limits." + name)
		limit, hasLimit := q.Spec.Hard[limitName]
		if hasRequest && hasLimit && request.Cmp(limit) > 0 {
			warnings = append(warnings, fmt.Sprintf("ResourceQuota %s (%s) should be less than %s (%s)",
				requestName, request.String(), limitName, limit.String()))
		}
	}
	return warnings
}

func validateSpec(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	errs := validateResourceList(spec.Hard, fldPath.Child("hard"))
	errs = append(errs, validateScopes(spec, fldPath.Child("scopes"))...)
	if spec.ScopeSelector != nil {
		errs = append(errs, validateScopeSelector(spec, fldPath.Child("scopeSelector", "matchExpressions"))...)
	}
	return errs
}

func validateStatus(status *corev1.ResourceQuotaStatus, fldPath *field.Path) field.ErrorList {
	errs := validateResourceList(status.Hard, fldPath.Child("hard"))
	return append(errs, validateResourceList(status.Used, fldPath.Child("used"))...)
}

// validateResourceList validates the names and quantities of a quota's
// resource list, in name order so errors come out the same every time.
func validateResourceList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedNames(list) {
		path := fldPath.Key(string(name))
		errs = append(errs, validateQuotaResourceName(name, path)...)
		errs = append(errs, validateQuantity(name, list[name], path)...)
	}
	return errs
}

// validateQuotaResourceName accepts a qualified name that is, when it has
// no prefix, a standard quota resource (pods, requests.cpu, ...).
// count/<resource>[.<group>] and domain-prefixed names are qualified.
func validateQuotaResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	if strings.Contains(string(name), "/") {
		return errs
	}
	if len(errs) == 0 && !isStandardResourceName(name) {
		errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource type or fully qualified"))
	}
	if !isStandardQuotaResourceName(name) {
		errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource for quota"))
	}
	return errs
}

// validateQuantity requires a non-negative quantity, and a whole number
// for object counts and extended resources.
func validateQuantity(name corev1.ResourceName, value resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if value.Sign() < 0 {
		errs = append(errs, field.Invalid(fldPath, value.String(), apimachineryvalidation.IsNegativeErrorMsg))
	}
	if isIntegerResourceName(name) && value.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, value, "must be an integer"))
	}
	return errs
}

// validateScopes requires known scopes, each valid for every standard
// resource in spec.hard, and no conflicting pair.
func validateScopes(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	if len(spec.Scopes) == 0 {
		return nil
	}
	var errs field.ErrorList
	hard := sortedNames(spec.Hard)
	for _, scope := range spec.Scopes {
		if !isStandardScope(scope) {
			errs = append(errs, field.Invalid(fldPath, spec.Scopes, "unsupported scope"))
		}
		for _, name := range hard {
			if isStandardQuotaResourceName(name) && !scopeValidForResource(scope, name) {
				errs = append(errs, field.Invalid(fldPath, spec.Scopes, "unsupported scope applied to resource"))
			}
		}
	}
	if conflicting(sets.New(spec.Scopes...)) {
		errs = append(errs, field.Invalid(fldPath, spec.Scopes, "conflicting scopes"))
	}
	return errs
}

// validateScopeSelector validates spec.scopeSelector.matchExpressions like
// validateScopes, plus each expression's operator and values.
func validateScopeSelector(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	hard := sortedNames(spec.Hard)
	scopes := sets.New[corev1.ResourceQuotaScope]()
	for _, req := range spec.ScopeSelector.MatchExpressions {
		if !isStandardScope(req.ScopeName) {
			errs = append(errs, field.Invalid(fldPath.Child("scopeName"), req.ScopeName, "unsupported scope"))
		}
		for _, name := range hard {
			if isStandardQuotaResourceName(name) && !scopeValidForResource(req.ScopeName, name) {
				errs = append(errs, field.Invalid(fldPath, spec.ScopeSelector, "unsupported scope applied to resource"))
			}
		}
		switch req.ScopeName {
		case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
			corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
			corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
			if req.Operator != corev1.ScopeSelectorOpExists {
				errs = append(errs, field.Invalid(fldPath.Child("operator"), req.Operator,
					"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
			}
		}
		switch req.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(fldPath.Child("values"),
					"must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(fldPath.Child("values"), req.Values,
					"must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(fldPath.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		scopes.Insert(req.ScopeName)
	}
	if conflicting(scopes) {
		errs = append(errs, field.Invalid(fldPath, spec.Scopes, "conflicting scopes"))
	}
	return errs
}

// conflicting reports whether scopes holds both BestEffort and
// NotBestEffort, or both Terminating and NotTerminating.
func conflicting(scopes sets.Set[corev1.ResourceQuotaScope]) bool {
	return scopes.HasAll(corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort) ||
		scopes.HasAll(corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating)
}

func sortedNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// The resource name sets below are upstream's (pkg/apis/core/helper).

// quotaResources are the unprefixed resources the quota system tracks.
var quotaResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsStorage, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourcePersistentVolumeClaims, corev1.ResourceConfigMaps,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

// integerResources are counted in whole objects.
var integerResources = []corev1.ResourceName{
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

func isQuotaHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

// isStandardQuotaResourceName reports whether the quota system tracks name.
func isStandardQuotaResourceName(name corev1.ResourceName) bool {
	return slices.Contains(quotaResources, name) || isQuotaHugePages(name)
}

// isStandardResourceName reports whether name is a resource known to the
// system: the quota resources and storage.
func isStandardResourceName(name corev1.ResourceName) bool {
	return name == corev1.ResourceStorage || isStandardQuotaResourceName(name)
}

// isExtendedResourceName reports whether name is an extended resource:
// prefixed outside kubernetes.io, not requests.*, and a qualified name
// once prefixed with "requests.".
func isExtendedResourceName(name corev1.ResourceName) bool {
	native := !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
	if native || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func isIntegerResourceName(name corev1.ResourceName) bool {
	return slices.Contains(integerResources, name) || isExtendedResourceName(name)
}

func isStandardScope(scope corev1.ResourceQuotaScope) bool {
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
		corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeVolumeAttributesClass,
		corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return true
	}
	return false
}

// scopeValidForResource reports whether scope can limit resource: pod
// scopes apply to pod counts and compute, VolumeAttributesClass to
// persistent volume claims and their storage.
func scopeValidForResource(scope corev1.ResourceQuotaScope, name corev1.ResourceName) bool {
	podCount := name == corev1.ResourcePods
	podCompute := slices.Contains([]corev1.ResourceName{
		corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceLimitsCPU,
		corev1.ResourceLimitsMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	}, name)
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return podCount || podCompute
	case corev1.ResourceQuotaScopeBestEffort:
		return podCount
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return name == corev1.ResourcePersistentVolumeClaims || name == corev1.ResourceRequestsStorage
	default:
		return true
	}
}
