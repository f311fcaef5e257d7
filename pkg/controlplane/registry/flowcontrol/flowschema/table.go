package flowschema

import (
	"context"
	"slices"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
)

// tableConvertor prints lists in matching order, as kubectl shows them.
type tableConvertor struct {
	table.Convertor
}

// TableConvertor prints NAME PRIORITYLEVEL MATCHINGPRECEDENCE
// DISTINGUISHERMETHOD AGE MISSINGPL like upstream; MISSINGPL is the status
// of the Dangling condition, "?" without one. Lists are sorted by matching
// precedence, then name: the order in which requests are matched.
func TableConvertor() rest.TableConvertor {
	return tableConvertor{table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "PriorityLevel", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]},
		{Name: "MatchingPrecedence", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]},
		{Name: "DistinguisherMethod", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]},
		table.AgeColumn(),
		{Name: "MissingPL", Type: "string", Description: "references a broken or non-existent PriorityLevelConfiguration"},
	}, func(obj runtime.Object) ([]interface{}, error) {
		fs := obj.(*flowcontrolv1.FlowSchema)
		method := "<none>"
		if fs.Spec.DistinguisherMethod != nil {
			method = string(fs.Spec.DistinguisherMethod.Type)
		}
		missing := "?"
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				missing = string(c.Status)
				break
			}
		}
		return []interface{}{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), method, table.Age(fs.CreationTimestamp), missing}, nil
	})}
}

// ConvertToTable sorts a list (in a copy) before printing it.
func (c tableConvertor) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	if list, ok := obj.(*flowcontrolv1.FlowSchemaList); ok {
		sorted := *list
		sorted.Items = slices.Clone(list.Items)
		slices.SortStableFunc(sorted.Items, func(a, b flowcontrolv1.FlowSchema) int {
			if a.Spec.MatchingPrecedence != b.Spec.MatchingPrecedence {
				return int(a.Spec.MatchingPrecedence) - int(b.Spec.MatchingPrecedence)
			}
			switch {
			case a.Name < b.Name:
				return -1
			case a.Name > b.Name:
				return 1
			}
			return 0
		})
		obj = &sorted
	}
	return c.Convertor.ConvertToTable(ctx, obj, tableOptions)
}
