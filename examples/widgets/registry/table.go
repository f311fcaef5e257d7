package registry

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"

	v1 "example.dev/widgets/apis/widgets/v1"
)

// TableConvertor prints NAME SIZE COLOR PHASE AGE for `kubectl get widgets`.
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Size", Type: "integer", Description: "The size of the widget."},
		{Name: "Color", Type: "string", Description: "The color of the widget."},
		{Name: "Phase", Type: "string", Description: "The phase the widget controller reports."},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		w := obj.(*v1.Widget)
		return []interface{}{w.Name, int64(w.Spec.Size), w.Spec.Color, w.Status.Phase, table.Age(w.CreationTimestamp)}, nil
	})
}
