// Package event serves events. core/v1 and events.k8s.io/v1 events share
// one storage of core/v1 Events; validation depends on the group/version a
// request came through, as upstream: core/v1 keeps the lenient legacy rules.
package event

import (
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
)

// Length limits of event fields, as upstream.
const (
	ReportingInstanceLengthLimit = 128
	ActionLengthLimit            = 128
	ReasonLengthLimit            = 128
	NoteLengthLimit              = 1024
)

func isLegacy(gv schema.GroupVersion) bool {
	return gv == corev1.SchemeGroupVersion || gv == (schema.GroupVersion{Group: "events.k8s.io", Version: "v1beta1"})
}

// Validate validates a new event created through requestVersion.
func Validate(ev *corev1.Event, requestVersion schema.GroupVersion) field.ErrorList {
	errs := legacyValidate(ev, requestVersion)
	if isLegacy(requestVersion) {
		return errs
	}
	errs = append(errs, metavalidation.ValidateObjectMeta(&ev.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, validateSeries(ev)...)
	if ev.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", ev.Type)))
	}
	if !ev.FirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !ev.LastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if ev.Count != 0 {
		errs = append(errs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if ev.Source.Component != "" || ev.Source.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return errs
}

// ValidateUpdate validates an update through requestVersion; through
// events.k8s.io/v1 everything but series and metadata is immutable.
func ValidateUpdate(ev, old *corev1.Event, requestVersion schema.GroupVersion) field.ErrorList {
	errs := legacyValidate(ev, requestVersion)
	if isLegacy(requestVersion) {
		return errs
	}
	errs = append(errs, metavalidation.ValidateObjectMetaUpdate(&ev.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	if !reflect.DeepEqual(ev.Series, old.Series) {
		errs = append(errs, validateSeries(ev)...)
	}
	immutable := func(newVal, oldVal interface{}, name string) {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(newVal, oldVal, field.NewPath(name))...)
	}
	immutable(ev.InvolvedObject, old.InvolvedObject, "involvedObject")
	immutable(ev.Reason, old.Reason, "reason")
	immutable(ev.Message, old.Message, "message")
	immutable(ev.Source, old.Source, "source")
	immutable(ev.FirstTimestamp, old.FirstTimestamp, "firstTimestamp")
	immutable(ev.LastTimestamp, old.LastTimestamp, "lastTimestamp")
	immutable(ev.Count, old.Count, "count")
	immutable(ev.Type, old.Type, "type")
	if !ev.EventTime.Truncate(time.Microsecond).UTC().Equal(old.EventTime.Truncate(time.Microsecond).UTC()) {
		immutable(ev.EventTime, old.EventTime, "eventTime")
	}
	immutable(ev.Action, old.Action, "action")
	immutable(ev.Related, old.Related, "related")
	immutable(ev.ReportingController, old.ReportingController, "reportingController")
	immutable(ev.ReportingInstance, old.ReportingInstance, "reportingInstance")
	return errs
}

func validateSeries(ev *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if ev.Series != nil {
		if ev.Series.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
		}
		if ev.Series.LastObservedTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
		}
	}
	return errs
}

// legacyValidate holds the rules every event meets, whichever version.
func legacyValidate(ev *corev1.Event, requestVersion schema.GroupVersion) field.ErrorList {
	var errs field.ErrorList
	controllerField := "reportingController"
	if requestVersion == corev1.SchemeGroupVersion {
		controllerField = "reportingComponent"
	}
	nsMismatch := field.Invalid(field.NewPath("involvedObject", "namespace"), ev.InvolvedObject.Namespace, "does not match event.namespace")
	if ev.EventTime.IsZero() {
		if ev.InvolvedObject.Namespace == "" {
			if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
				errs = append(errs, nsMismatch)
			}
		} else if ev.Namespace != ev.InvolvedObject.Namespace {
			errs = append(errs, nsMismatch)
		}
		return errs
	}
	if ev.InvolvedObject.Namespace == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
		errs = append(errs, nsMismatch)
	}
	if ev.ReportingController == "" {
		errs = append(errs, field.Required(field.NewPath(controllerField), ""))
	}
	for _, msg := range validation.IsQualifiedName(ev.ReportingController) {
		errs = append(errs, field.Invalid(field.NewPath(controllerField), ev.ReportingController, msg))
	}
	limit := func(value, name string, max int, required bool) {
		if required && value == "" {
			errs = append(errs, field.Required(field.NewPath(name), ""))
		}
		if len(value) > max {
			errs = append(errs, field.Invalid(field.NewPath(name), "", fmt.Sprintf("can have at most %v characters", max)))
		}
	}
	limit(ev.ReportingInstance, "reportingInstance", ReportingInstanceLengthLimit, true)
	limit(ev.Action, "action", ActionLengthLimit, true)
	limit(ev.Reason, "reason", ReasonLengthLimit, true)
	limit(ev.Message, "message", NoteLengthLimit, false)
	return errs
}
