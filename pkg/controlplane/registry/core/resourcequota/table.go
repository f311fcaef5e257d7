package resourcequota

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
)

// TableConvertor prints NAME REQUEST LIMIT AGE, as kubectl shows quotas:
// REQUEST lists "resource: used/hard" for each resource in status.hard
// except limits.*, which LIMIT lists, both sorted by resource name.
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Request", Type: "string", Description: "Request represents a minimum amount of cpu/memory that a container may consume."},
		{Name: "Limit", Type: "string", Description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		q := obj.(*corev1.ResourceQuota)
		request, limit := usage(q.Status)
		return []interface{}{q.Name, request, limit, table.Age(q.CreationTimestamp)}, nil
	})
}

// usage formats the REQUEST and LIMIT cells of a quota's status.
func usage(status corev1.ResourceQuotaStatus) (request, limit string) {
	resources := make([]corev1.ResourceName, 0, len(status.Hard))
	for r := range status.Hard {
		resources = append(resources, r)
	}
	slices.Sort(resources)
	var requests, limits []string
	for _, r := range resources {
		used, hard := status.Used[r], status.Hard[r]
		entry := fmt.Sprintf("%s: %s/%s", r, used.String(), hard.String())
		if prefix, _, found := strings.Cut(string(r), "."); found && prefix == "limits" {
			limits = append(limits, entry)
		} else {
			requests = append(requests, entry)
		}
	}
	return strings.Join(requests, ", "), strings.Join(limits, ", ")
}
