package configmap

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
)

// TableConvertor prints NAME DATA AGE, as kubectl shows configmaps.
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Data", Type: "string"},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		cm := obj.(*corev1.ConfigMap)
		return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), table.Age(cm.CreationTimestamp)}, nil
	})
}
