package event

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func newEvent() *corev1.Event {
	return &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "e", Namespace: "default"},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "example.com/ctl",
		ReportingInstance:   "i",
		Action:              "Do",
		Reason:              "Done",
		Type:                corev1.EventTypeNormal,
		InvolvedObject:      corev1.ObjectReference{Kind: "ConfigMap", Name: "c", Namespace: "default"},
	}
}

func TestValidateDependsOnRequestVersion(t *testing.T) {
	ev := newEvent()
	ev.Type = "Odd"
	if errs := Validate(ev, corev1.SchemeGroupVersion); len(errs) != 0 {
		t.Fatalf("core/v1 keeps the legacy rules, got %v", errs)
	}
	errs := Validate(ev, eventsv1.SchemeGroupVersion)
	if len(errs) != 1 || errs[0].Field != "type" {
		t.Fatalf("events.k8s.io/v1 rejects the type, got %v", errs)
	}
	missing := newEvent()
	missing.ReportingController = ""
	errs = Validate(missing, corev1.SchemeGroupVersion)
	if len(errs) == 0 || errs[0].Field != "reportingComponent" || errs[0].Type != field.ErrorTypeRequired {
		t.Fatalf("core/v1 names the field reportingComponent, got %v", errs)
	}
	for _, e := range errs {
		if e.Field != "reportingComponent" {
			t.Fatalf("unexpected error %v", e)
		}
	}
}

func TestUpdateThroughEventsV1IsImmutable(t *testing.T) {
	old := newEvent()
	old.ResourceVersion = "1"
	changed := old.DeepCopy()
	changed.Reason = "Other"
	errs := ValidateUpdate(changed, old, eventsv1.SchemeGroupVersion)
	if len(errs) != 1 || errs[0].Field != "reason" {
		t.Fatalf("got %v", errs)
	}
}

func TestConversionRoundTrip(t *testing.T) {
	in := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "e", Namespace: "n"},
		EventTime:           metav1.NewMicroTime(time.Unix(10, 0)),
		Series:              &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(time.Unix(20, 0))},
		ReportingController: "c", ReportingInstance: "i", Action: "a", Reason: "r", Type: "Normal",
		Note:                     "note",
		Regarding:                corev1.ObjectReference{Kind: "K", Name: "x"},
		Related:                  &corev1.ObjectReference{Kind: "R"},
		DeprecatedSource:         corev1.EventSource{Component: "comp"},
		DeprecatedFirstTimestamp: metav1.Unix(1, 0),
		DeprecatedLastTimestamp:  metav1.Unix(2, 0),
		DeprecatedCount:          4,
	}
	var core corev1.Event
	ToCore(in, &core)
	if core.Message != "note" || core.InvolvedObject.Name != "x" || core.Count != 4 || core.Source.Component != "comp" {
		t.Fatalf("core: %+v", core)
	}
	var back eventsv1.Event
	FromCore(&core, &back)
	if !equality.Semantic.DeepEqual(in, &back) {
		t.Fatalf("round trip changed the event:\n%+v\n%+v", in, &back)
	}
}

func TestTableWideColumns(t *testing.T) {
	tbl, err := TableConvertor().ConvertToTable(t.Context(), newEvent(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.ColumnDefinitions) != 10 || len(tbl.Rows[0].Cells) != 10 {
		t.Fatalf("want 10 columns and cells, got %d/%d", len(tbl.ColumnDefinitions), len(tbl.Rows[0].Cells))
	}
	if tbl.Rows[0].Cells[3] != "configmap/c" || tbl.Rows[0].Cells[5] != "example.com/ctl, i" || tbl.Rows[0].Cells[8] != int64(1) {
		t.Fatalf("cells %v", tbl.Rows[0].Cells)
	}
}
