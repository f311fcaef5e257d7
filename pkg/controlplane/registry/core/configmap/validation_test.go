package configmap

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func cm(name string, data map[string]string, binary map[string][]byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1"}, Data: data, BinaryData: binary}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		cm   *corev1.ConfigMap
		want map[string]field.ErrorType // field path -> type; empty means valid
	}{
		{"valid", cm("app", map[string]string{"a.conf": "x", "B_2": "y"}, map[string][]byte{"bin": {1}}), nil},
		{"bad name", cm("Not_Valid", nil, nil), map[string]field.ErrorType{"metadata.name": field.ErrorTypeInvalid}},
		{"missing namespace", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, map[string]field.ErrorType{"metadata.namespace": field.ErrorTypeRequired}},
		{"bad data key", cm("a", map[string]string{"no spaces": "x"}, nil), map[string]field.ErrorType{"data[no spaces]": field.ErrorTypeInvalid}},
		{"bad binary key", cm("a", nil, map[string][]byte{"a/b": nil}), map[string]field.ErrorType{"binaryData[a/b]": field.ErrorTypeInvalid}},
		{"duplicate key", cm("a", map[string]string{"k": "x"}, map[string][]byte{"k": nil}), map[string]field.ErrorType{"data[k]": field.ErrorTypeInvalid}},
		{"over 1 MiB", cm("a", map[string]string{"k": strings.Repeat("x", corev1.MaxSecretSize)}, map[string][]byte{"b": {1}}), map[string]field.ErrorType{field.NewPath("").String(): field.ErrorTypeTooLong}},
		{"bad finalizer", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "d", Finalizers: []string{"custom"}}}, map[string]field.ErrorType{"metadata.finalizers[0]": field.ErrorTypeInvalid}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertErrors(t, Validate(c.cm), c.want)
		})
	}
}

func TestValidateUpdateImmutable(t *testing.T) {
	yes := true
	old := cm("a", map[string]string{"k": "v"}, nil)
	old.Immutable = &yes
	changed := old.DeepCopy()
	changed.Data["k"] = "other"
	assertErrors(t, ValidateUpdate(changed, old), map[string]field.ErrorType{"data": field.ErrorTypeForbidden})
	mutable := old.DeepCopy()
	mutable.Immutable = nil
	assertErrors(t, ValidateUpdate(mutable, old), map[string]field.ErrorType{"immutable": field.ErrorTypeForbidden})
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"ok": "yes"}
	assertErrors(t, ValidateUpdate(labelled, old), nil)
}

func assertErrors(t *testing.T, errs field.ErrorList, want map[string]field.ErrorType) {
	t.Helper()
	got := map[string]field.ErrorType{}
	for _, e := range errs {
		got[e.Field] = e.Type
	}
	if len(got) != len(want) {
		t.Fatalf("errors %v, want %v", errs, want)
	}
	for f, typ := range want {
		if got[f] != typ {
			t.Fatalf("errors %v, want %s at %q", errs, typ, f)
		}
	}
}

func TestTable(t *testing.T) {
	tbl, err := TableConvertor().ConvertToTable(t.Context(), &corev1.ConfigMapList{Items: []corev1.ConfigMap{*cm("a", map[string]string{"x": "1"}, map[string][]byte{"y": nil})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "Name,Data,Age" || len(tbl.Rows) != 1 || tbl.Rows[0].Cells[1] != int64(2) {
		t.Fatalf("table %v rows %v", names, tbl.Rows)
	}
}
