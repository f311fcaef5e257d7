package namespace

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// conditionTypes are the namespace conditions the controller maintains,
// in the order it adds them.
var conditionTypes = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// okConditions are the reasons and messages of the conditions when all is
// well (status False), as upstream words them.
var okConditions = map[corev1.NamespaceConditionType]struct{ reason, message string }{
	corev1.NamespaceDeletionDiscoveryFailure: {"ResourcesDiscovered", "All resources successfully discovered"},
	corev1.NamespaceDeletionGVParsingFailure: {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
	corev1.NamespaceDeletionContentFailure:   {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	corev1.NamespaceContentRemaining:         {"ContentRemoved", "All content successfully removed"},
	corev1.NamespaceFinalizersRemaining:      {"ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// conditions collects what went wrong in one pass over a namespace; apply
// turns it into the namespace's conditions.
type conditions struct {
	failing       map[corev1.NamespaceConditionType]corev1.NamespaceCondition
	contentErrors []string
}

func (c *conditions) set(t corev1.NamespaceConditionType, reason, message string) {
	if c.failing == nil {
		c.failing = map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	}
	c.failing[t] = corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message}
}

// discoveryFailed reports that discovery failed, for some groups or all;
// explain, if not nil, says why a group version failed (its APIService's
// condition).
func (c *conditions) discoveryFailed(err error, explain func(schema.GroupVersion) string) {
	msg := err.Error()
	var groupErr *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &groupErr) {
		msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(groupErr.Groups), err)
		if explain != nil {
			var why []string
			for _, gv := range slices.SortedFunc(maps.Keys(groupErr.Groups), func(a, b schema.GroupVersion) int {
				return strings.Compare(a.String(), b.String())
			}) {
				if e := explain(gv); e != "" {
					why = append(why, e)
				}
			}
			if len(why) > 0 {
				msg += "; " + strings.Join(why, "; ")
			}
		}
	}
	c.set(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
}

// groupVersionParsingFailed reports group versions that did not parse.
func (c *conditions) groupVersionParsingFailed(err error) {
	c.set(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", err.Error())
}

// deleteContentFailed reports that deleting one resource failed.
func (c *conditions) deleteContentFailed(err error) {
	c.contentErrors = append(c.contentErrors, err.Error())
}

// contentTotals is what remains in a namespace after a pass.
type contentTotals struct {
	// resources counts the remaining objects by resource.
	resources map[schema.GroupVersionResource]int
	// finalizers counts the remaining objects by finalizer.
	finalizers map[string]int
}

// contentRemaining reports the content left in the namespace.
func (c *conditions) contentRemaining(totals contentTotals) {
	var resources, finalizers []string
	for gvr, n := range totals.resources {
		if n > 0 {
			resources = append(resources, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
		}
	}
	for f, n := range totals.finalizers {
		if n > 0 {
			finalizers = append(finalizers, fmt.Sprintf("%s in %d resource instances", f, n))
		}
	}
	// Sorted, so that the same content gives the same message.
	slices.Sort(resources)
	slices.Sort(finalizers)
	if len(resources) > 0 {
		c.set(corev1.NamespaceContentRemaining, "SomeResourcesRemain",
			"Some resources are remaining: "+strings.Join(resources, ", "))
	}
	if len(finalizers) > 0 {
		c.set(corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: "+strings.Join(finalizers, ", "))
	}
}

// desired returns the condition of type t this pass calls for.
func (c *conditions) desired(t corev1.NamespaceConditionType) corev1.NamespaceCondition {
	if cond, ok := c.failing[t]; ok {
		return cond
	}
	if t == corev1.NamespaceDeletionContentFailure && len(c.contentErrors) > 0 {
		msgs := slices.Sorted(slices.Values(c.contentErrors))
		return corev1.NamespaceCondition{
			Type:    t,
			Status:  corev1.ConditionTrue,
			Reason:  "ContentDeletionFailed",
			Message: fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(msgs), strings.Join(msgs, ", ")),
		}
	}
	ok := okConditions[t]
	return corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: ok.reason, Message: ok.message}
}

// apply sets the controller's conditions in status and says whether
// anything changed. A condition's transition time changes only when its
// status does; other conditions are left as they are.
func (c *conditions) apply(status *corev1.NamespaceStatus) bool {
	changed := false
	now := metav1.Now()
	for _, t := range conditionTypes {
		want := c.desired(t)
		i := slices.IndexFunc(status.Conditions, func(cond corev1.NamespaceCondition) bool { return cond.Type == t })
		if i < 0 {
			want.LastTransitionTime = now
			status.Conditions = append(status.Conditions, want)
			changed = true
			continue
		}
		have := &status.Conditions[i]
		if have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message {
			continue
		}
		if have.Status != want.Status {
			have.LastTransitionTime = now
		}
		have.Status, have.Reason, have.Message = want.Status, want.Reason, want.Message
		changed = true
	}
	return changed
}
