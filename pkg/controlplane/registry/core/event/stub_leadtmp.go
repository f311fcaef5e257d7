package event

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
)

func Validate(o *corev1.Event, gv schema.GroupVersion) field.ErrorList            { return nil }
func ValidateUpdate(o, old *corev1.Event, gv schema.GroupVersion) field.ErrorList { return nil }
func TableConvertor() rest.TableConvertor {
	return rest.NewDefaultTableConvertor(corev1.Resource("events"))
}
func ToCore(in *eventsv1.Event, out *corev1.Event) {
	out.ObjectMeta = in.ObjectMeta
	out.InvolvedObject = in.Regarding
	out.Message = in.Note
	out.Reason = in.Reason
	out.Type = in.Type
	out.EventTime = in.EventTime
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
	out.Action = in.Action
}
func FromCore(in *corev1.Event, out *eventsv1.Event) {
	out.ObjectMeta = in.ObjectMeta
	out.Regarding = in.InvolvedObject
	out.Note = in.Message
	out.Reason = in.Reason
	out.Type = in.Type
	out.EventTime = in.EventTime
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
	out.Action = in.Action
}
