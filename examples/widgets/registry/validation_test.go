package registry

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.dev/widgets/apis/widgets/v1"
)

func TestValidate(t *testing.T) {
	widget := func(spec v1.WidgetSpec) *v1.Widget {
		return &v1.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "default"}, Spec: spec}
	}
	var missingSize v1.Widget
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"w","namespace":"default"},"spec":{"color":"red"}}`), &missingSize); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		widget *v1.Widget
		want   []string // field paths with errors
		typ    field.ErrorType
	}{
		{"valid", widget(v1.WidgetSpec{Size: 1, Color: v1.ColorRed, Message: "hi"}), nil, ""},
		{"largest", widget(v1.WidgetSpec{Size: 100, Color: v1.ColorBlue}), nil, ""},
		{"size 0", widget(v1.WidgetSpec{Size: 0, Color: v1.ColorGreen}), []string{"spec.size"}, field.ErrorTypeRequired},
		{"size 101", widget(v1.WidgetSpec{Size: 101, Color: v1.ColorGreen}), []string{"spec.size"}, field.ErrorTypeInvalid},
		{"negative size", widget(v1.WidgetSpec{Size: -1, Color: v1.ColorGreen}), []string{"spec.size"}, field.ErrorTypeInvalid},
		{"bad color", widget(v1.WidgetSpec{Size: 5, Color: "purple"}), []string{"spec.color"}, field.ErrorTypeNotSupported},
		{"missing size", &missingSize, []string{"spec.size"}, field.ErrorTypeRequired},
		{"bad name", &v1.Widget{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name", Namespace: "default"}, Spec: v1.WidgetSpec{Size: 5, Color: v1.ColorRed}}, []string{"metadata.name"}, field.ErrorTypeInvalid},
		{"no namespace", &v1.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: v1.WidgetSpec{Size: 5, Color: v1.ColorRed}}, []string{"metadata.namespace"}, field.ErrorTypeRequired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := Validate(c.widget)
			var got []string
			for _, err := range errs {
				got = append(got, err.Field)
				if err.Type != c.typ {
					t.Errorf("error %v has type %s, want %s", err, err.Type, c.typ)
				}
			}
			if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) {
				t.Errorf("errors %v, want at %v", errs, c.want)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := &v1.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "default", ResourceVersion: "1"}, Spec: v1.WidgetSpec{Size: 5, Color: v1.ColorRed}}
	w := old.DeepCopy()
	w.Spec.Color = "pink"
	if errs := ValidateUpdate(w, old); len(errs) != 1 || errs[0].Field != "spec.color" {
		t.Errorf("errors %v, want one at spec.color", errs)
	}

	status := old.DeepCopy()
	status.Status.ObservedGeneration = -1
	status.Status.Conditions = []metav1.Condition{{Type: v1.ConditionReady, Status: "Maybe", Reason: "Reconciled", LastTransitionTime: metav1.Now()}}
	errs := ValidateStatusUpdate(status, old)
	var fields []string
	for _, err := range errs {
		fields = append(fields, err.Field)
	}
	if len(errs) != 2 || fields[0] != "status.observedGeneration" || fields[1] != "status.conditions[0].status" {
		t.Errorf("errors %v, want at status.observedGeneration and status.conditions[0].status", errs)
	}
}
