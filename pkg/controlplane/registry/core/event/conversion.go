package event

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
)

// ToCore converts an events.k8s.io/v1 Event to the core/v1 Event it is
// stored as, field for field as upstream's conversion.
func ToCore(in *eventsv1.Event, out *corev1.Event) {
	out.ObjectMeta = in.ObjectMeta
	out.EventTime = in.EventTime
	out.Series = nil
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
	out.Action = in.Action
	out.Reason = in.Reason
	out.Related = in.Related
	out.Type = in.Type
	out.InvolvedObject = in.Regarding
	out.Source = in.DeprecatedSource
	out.Message = in.Note
	out.FirstTimestamp = in.DeprecatedFirstTimestamp
	out.LastTimestamp = in.DeprecatedLastTimestamp
	out.Count = in.DeprecatedCount
}

// FromCore converts a stored core/v1 Event to events.k8s.io/v1.
func FromCore(in *corev1.Event, out *eventsv1.Event) {
	out.ObjectMeta = in.ObjectMeta
	out.EventTime = in.EventTime
	out.Series = nil
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
	out.Action = in.Action
	out.Reason = in.Reason
	out.Related = in.Related
	out.Type = in.Type
	out.Regarding = in.InvolvedObject
	out.DeprecatedSource = in.Source
	out.Note = in.Message
	out.DeprecatedFirstTimestamp = in.FirstTimestamp
	out.DeprecatedLastTimestamp = in.LastTimestamp
	out.DeprecatedCount = in.Count
}
