package clustertrustbundle

import (
	"context"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// FieldLabels are the field selector labels bundles support.
func FieldLabels() map[string]string {
	return typed.Identity("metadata.name", "spec.signerName")
}

// Fields returns the selectable fields of a bundle.
func Fields(b *certificatesv1.ClusterTrustBundle) fields.Set {
	return generic.MergeFieldsSets(typed.ObjectMetaFieldsSet(&b.ObjectMeta, false), fields.Set{
		"spec.signerName": b.Spec.SignerName,
	})
}

// NewStore returns the storage of clustertrustbundles. Updates need a
// resourceVersion, as upstream.
func NewStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	strategy := &typed.Strategy[*certificatesv1.ClusterTrustBundle]{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		ValidateCreate: func(_ context.Context, b *certificatesv1.ClusterTrustBundle) field.ErrorList {
			return Validate(b)
		},
		ValidateUpdateFn: func(_ context.Context, b, old *certificatesv1.ClusterTrustBundle) field.ErrorList {
			return ValidateUpdate(b, old)
		},
	}
	return typed.Resource[*certificatesv1.ClusterTrustBundle, *certificatesv1.ClusterTrustBundleList]{
		GroupResource: certificatesv1.Resource("clustertrustbundles"),
		Singular:      "clustertrustbundle",
		New:           func() *certificatesv1.ClusterTrustBundle { return &certificatesv1.ClusterTrustBundle{} },
		NewList:       func() *certificatesv1.ClusterTrustBundleList { return &certificatesv1.ClusterTrustBundleList{} },
		Strategy:      strategy,
		Table:         TableConvertor(),
		Fields:        Fields,
	}.NewStore(optsGetter)
}

// TableConvertor prints NAME SIGNERNAME, as kubectl shows bundles
// ("<none>" for a bundle without a signer).
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "SignerName", Type: "string", Description: certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"]},
	}, func(obj runtime.Object) ([]interface{}, error) {
		b := obj.(*certificatesv1.ClusterTrustBundle)
		signer := "<none>"
		if b.Spec.SignerName != "" {
			signer = b.Spec.SignerName
		}
		return []interface{}{b.Name, signer}, nil
	})
}
