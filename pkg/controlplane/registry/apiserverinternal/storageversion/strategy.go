package storageversion

import (
	"context"
	"fmt"
	"strings"

	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// apiVersion is the served version, the key of the reset fields.
const apiVersion fieldpath.APIVersion = "internal.apiserver.k8s.io/v1alpha1"

// Storage is the REST storage of storageversions and their status.
type Storage struct {
	StorageVersion *genericregistry.Store
	Status         *typed.Subresource
}

// NewStorage returns the storage of cluster-scoped storageversions and
// storageversions/status. As upstream, the status is cleared on create and
// kept on update of the main resource: API servers write it through the
// status subresource, which in turn cannot change metadata or spec.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	strategy := &typed.Strategy[*apiserverinternalv1alpha1.StorageVersion]{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		PrepareCreate: func(_ context.Context, sv *apiserverinternalv1alpha1.StorageVersion) {
			sv.Status = apiserverinternalv1alpha1.StorageVersionStatus{}
		},
		PrepareUpdateFn: func(_ context.Context, sv, old *apiserverinternalv1alpha1.StorageVersion) {
			sv.Status = old.Status
		},
		ValidateCreate: func(_ context.Context, sv *apiserverinternalv1alpha1.StorageVersion) field.ErrorList {
			return Validate(sv)
		},
		ValidateUpdateFn: func(_ context.Context, sv, old *apiserverinternalv1alpha1.StorageVersion) field.ErrorList {
			return ValidateUpdate(sv, old)
		},
		ResetFields: map[fieldpath.APIVersion]*fieldpath.Set{
			apiVersion: fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
		},
	}
	store, err := typed.Resource[*apiserverinternalv1alpha1.StorageVersion, *apiserverinternalv1alpha1.StorageVersionList]{
		GroupResource: apiserverinternalv1alpha1.Resource("storageversions"),
		Singular:      "storageversion",
		New:           func() *apiserverinternalv1alpha1.StorageVersion { return &apiserverinternalv1alpha1.StorageVersion{} },
		NewList: func() *apiserverinternalv1alpha1.StorageVersionList {
			return &apiserverinternalv1alpha1.StorageVersionList{}
		},
		Strategy: strategy,
		Table:    TableConvertor(),
	}.NewStore(optsGetter)
	if err != nil {
		return nil, err
	}

	status := typed.StatusStrategy(strategy, apiVersion, typed.StatusResetsMetadata,
		func(sv, old *apiserverinternalv1alpha1.StorageVersion) { sv.Spec = old.Spec }, ValidateStatusUpdate)
	return &Storage{StorageVersion: store, Status: typed.NewSubresource(store, status)}, nil
}

// TableConvertor prints NAME COMMONENCODINGVERSION STORAGEVERSIONS AGE, as
// kubectl shows storage versions.
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "CommonEncodingVersion", Type: "string", Description: apiserverinternalv1alpha1.StorageVersionStatus{}.SwaggerDoc()["commonEncodingVersion"]},
		{Name: "StorageVersions", Type: "string", Description: apiserverinternalv1alpha1.StorageVersionStatus{}.SwaggerDoc()["storageVersions"]},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		sv := obj.(*apiserverinternalv1alpha1.StorageVersion)
		common := "<unset>"
		if sv.Status.CommonEncodingVersion != nil {
			common = *sv.Status.CommonEncodingVersion
		}
		return []interface{}{sv.Name, common, formatStorageVersions(sv.Status.StorageVersions), table.Age(sv.CreationTimestamp)}, nil
	})
}

// formatStorageVersions lists up to three "<apiServerID>=<encodingVersion>"
// pairs and says how many more there are, like kubectl.
func formatStorageVersions(versions []apiserverinternalv1alpha1.ServerStorageVersion) string {
	const maxListed = 3
	var list []string
	for _, v := range versions {
		if len(list) == maxListed {
			break
		}
		list = append(list, fmt.Sprintf("%s=%s", v.APIServerID, v.EncodingVersion))
	}
	if len(list) == 0 {
		return "<unset>"
	}
	s := strings.Join(list, ",")
	if len(versions) > maxListed {
		s += fmt.Sprintf(" + %d more...", len(versions)-maxListed)
	}
	return s
}
