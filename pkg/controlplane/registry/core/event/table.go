package event

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
)

// TableConvertor prints events as kubectl shows them: LAST SEEN, TYPE,
// REASON, OBJECT, MESSAGE, and with -o wide SUBOBJECT, SOURCE, FIRST SEEN,
// COUNT and NAME.
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string"},
		{Name: "Type", Type: "string"},
		{Name: "Reason", Type: "string"},
		{Name: "Object", Type: "string"},
		{Name: "Subobject", Type: "string", Priority: 1},
		{Name: "Source", Type: "string", Priority: 1},
		{Name: "Message", Type: "string"},
		{Name: "First Seen", Type: "string", Priority: 1},
		{Name: "Count", Type: "string", Priority: 1},
		{Name: "Name", Type: "string", Priority: 1, Format: "name"},
	}, func(obj runtime.Object) ([]interface{}, error) {
		ev := obj.(*corev1.Event)
		first := table.Age(ev.FirstTimestamp)
		if ev.FirstTimestamp.IsZero() {
			first = table.Age(metav1.NewTime(ev.EventTime.Time))
		}
		last := table.Age(ev.LastTimestamp)
		if ev.LastTimestamp.IsZero() {
			last = first
		}
		count := ev.Count
		if ev.Series != nil {
			last = table.Age(metav1.NewTime(ev.Series.LastObservedTime.Time))
			count = ev.Series.Count
		} else if count == 0 {
			count = 1
		}
		target := strings.ToLower(ev.InvolvedObject.Kind)
		if ev.InvolvedObject.Name != "" {
			target = fmt.Sprintf("%s/%s", target, ev.InvolvedObject.Name)
		}
		return []interface{}{last, ev.Type, ev.Reason, target, ev.InvolvedObject.FieldPath,
			source(ev), strings.TrimSpace(ev.Message), first, int64(count), ev.Name}, nil
	})
}

// source prints the component and instance that reported an event.
func source(ev *corev1.Event) string {
	component, instance := ev.Source.Component, ev.Source.Host
	if component == "" {
		component = ev.ReportingController
	}
	if instance == "" {
		instance = ev.ReportingInstance
	}
	if instance == "" {
		return component
	}
	return component + ", " + instance
}
