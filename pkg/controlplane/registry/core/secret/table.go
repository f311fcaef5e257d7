package secret

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
)

// TableConvertor prints NAME TYPE DATA AGE, as kubectl shows secrets.
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Type", Type: "string"},
		{Name: "Data", Type: "string"},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		s := obj.(*corev1.Secret)
		return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), table.Age(s.CreationTimestamp)}, nil
	})
}
