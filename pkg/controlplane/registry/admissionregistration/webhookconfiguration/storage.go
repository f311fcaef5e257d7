// Package webhookconfiguration serves admissionregistration.k8s.io/v1
// validatingwebhookconfigurations and mutatingwebhookconfigurations:
// validated like upstream, generation bumped when the webhooks change,
// printed with NAME WEBHOOKS AGE.
package webhookconfiguration

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/validation"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// ValidatingStrategy is the strategy of validatingwebhookconfigurations.
func ValidatingStrategy(typer runtime.ObjectTyper) *typed.Strategy[*admissionregistrationv1.ValidatingWebhookConfiguration] {
	return &typed.Strategy[*admissionregistrationv1.ValidatingWebhookConfiguration]{
		Spec:          func(c *admissionregistrationv1.ValidatingWebhookConfiguration) any { return c.Webhooks },
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		ValidateCreate: func(_ context.Context, c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
			errs := validation.ValidateValidatingWebhookConfiguration(c)
			return append(errs, validation.ValidateStaticSuffix(c.Name, field.NewPath("metadata", "name"))...)
		},
		ValidateUpdateFn: func(_ context.Context, c, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
			return validation.ValidateValidatingWebhookConfigurationUpdate(c, old)
		},
		WarnCreate: func(_ context.Context, c *admissionregistrationv1.ValidatingWebhookConfiguration) []string {
			return validation.WarningsForValidatingWebhookRules(c.Webhooks)
		},
		WarnUpdate: func(_ context.Context, c, _ *admissionregistrationv1.ValidatingWebhookConfiguration) []string {
			return append(validation.WarningsForStaticSuffix(c.Name), validation.WarningsForValidatingWebhookRules(c.Webhooks)...)
		},
	}
}

// MutatingStrategy is the strategy of mutatingwebhookconfigurations.
func MutatingStrategy(typer runtime.ObjectTyper) *typed.Strategy[*admissionregistrationv1.MutatingWebhookConfiguration] {
	return &typed.Strategy[*admissionregistrationv1.MutatingWebhookConfiguration]{
		Spec:          func(c *admissionregistrationv1.MutatingWebhookConfiguration) any { return c.Webhooks },
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		ValidateCreate: func(_ context.Context, c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
			errs := validation.ValidateMutatingWebhookConfiguration(c)
			return append(errs, validation.ValidateStaticSuffix(c.Name, field.NewPath("metadata", "name"))...)
		},
		ValidateUpdateFn: func(_ context.Context, c, old *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
			return validation.ValidateMutatingWebhookConfigurationUpdate(c, old)
		},
		WarnCreate: func(_ context.Context, c *admissionregistrationv1.MutatingWebhookConfiguration) []string {
			return validation.WarningsForMutatingWebhookRules(c.Webhooks)
		},
		WarnUpdate: func(_ context.Context, c, _ *admissionregistrationv1.MutatingWebhookConfiguration) []string {
			return append(validation.WarningsForStaticSuffix(c.Name), validation.WarningsForMutatingWebhookRules(c.Webhooks)...)
		},
	}
}

// NewValidatingStore returns the storage of validatingwebhookconfigurations.
func NewValidatingStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	return typed.Resource[*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfigurationList]{
		GroupResource: admissionregistrationv1.Resource("validatingwebhookconfigurations"),
		Singular:      "validatingwebhookconfiguration",
		New: func() *admissionregistrationv1.ValidatingWebhookConfiguration {
			return &admissionregistrationv1.ValidatingWebhookConfiguration{}
		},
		NewList: func() *admissionregistrationv1.ValidatingWebhookConfigurationList {
			return &admissionregistrationv1.ValidatingWebhookConfigurationList{}
		},
		Strategy: ValidatingStrategy(typer),
		Table: tableConvertor(func(obj runtime.Object) (metav1.ObjectMeta, int) {
			c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
			return c.ObjectMeta, len(c.Webhooks)
		}),
	}.NewStore(optsGetter)
}

// NewMutatingStore returns the storage of mutatingwebhookconfigurations.
func NewMutatingStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	return typed.Resource[*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfigurationList]{
		GroupResource: admissionregistrationv1.Resource("mutatingwebhookconfigurations"),
		Singular:      "mutatingwebhookconfiguration",
		New: func() *admissionregistrationv1.MutatingWebhookConfiguration {
			return &admissionregistrationv1.MutatingWebhookConfiguration{}
		},
		NewList: func() *admissionregistrationv1.MutatingWebhookConfigurationList {
			return &admissionregistrationv1.MutatingWebhookConfigurationList{}
		},
		Strategy: MutatingStrategy(typer),
		Table: tableConvertor(func(obj runtime.Object) (metav1.ObjectMeta, int) {
			c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
			return c.ObjectMeta, len(c.Webhooks)
		}),
	}.NewStore(optsGetter)
}

// tableConvertor prints NAME WEBHOOKS AGE.
func tableConvertor(of func(runtime.Object) (metav1.ObjectMeta, int)) table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		meta, webhooks := of(obj)
		return []interface{}{meta.Name, int64(webhooks), table.Age(meta.CreationTimestamp)}, nil
	})
}
