// Package table builds kubectl table output (the Table a server returns for
// `kubectl get`) from column definitions and a row function.
package table

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Convertor prints objects with fixed columns.
type Convertor struct {
	columns []metav1.TableColumnDefinition
	row     func(obj runtime.Object) ([]interface{}, error)
}

var _ rest.TableConvertor = Convertor{}

// New returns a convertor; row returns one cell per column for an object.
func New(columns []metav1.TableColumnDefinition, row func(obj runtime.Object) ([]interface{}, error)) Convertor {
	return Convertor{columns: columns, row: row}
}

// NameColumn is the NAME column upstream prints first.
func NameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
}

// AgeColumn is the AGE column.
func AgeColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
}

// Age prints how long ago t was, like kubectl: "<unknown>" for the zero time.
func Age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

// ConvertToTable prints a single object or a list.
func (c Convertor) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	t := &metav1.Table{}
	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		t.ColumnDefinitions = c.columns
	}
	add := func(o runtime.Object) error {
		cells, err := c.row(o)
		if err != nil {
			return err
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: o}})
		return nil
	}
	if meta.IsListType(obj) {
		if err := meta.EachListItem(obj, add); err != nil {
			return nil, err
		}
		if l, err := meta.ListAccessor(obj); err == nil {
			t.ResourceVersion = l.GetResourceVersion()
			t.Continue = l.GetContinue()
			t.RemainingItemCount = l.GetRemainingItemCount()
		}
		return t, nil
	}
	if err := add(obj); err != nil {
		return nil, err
	}
	if m, err := meta.Accessor(obj); err == nil {
		t.ResourceVersion = m.GetResourceVersion()
	}
	return t, nil
}
