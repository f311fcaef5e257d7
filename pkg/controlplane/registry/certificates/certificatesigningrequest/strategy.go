package certificatesigningrequest

import (
	"context"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// resetVersion is the key of the reset fields of each strategy.
const resetVersion fieldpath.APIVersion = "certificates.k8s.io/v1"

// Storage is the REST storage of certificatesigningrequests and their
// approval and status subresources.
type Storage struct {
	CertificateSigningRequest *typed.ShortNamed
	Approval                  *typed.Subresource
	Status                    *typed.Subresource
}

// FieldLabels are the field selector labels requests support.
func FieldLabels() map[string]string {
	return typed.Identity("metadata.name", "spec.signerName")
}

// Fields returns the selectable fields of a request.
func Fields(csr *certificatesv1.CertificateSigningRequest) fields.Set {
	return generic.MergeFieldsSets(typed.ObjectMetaFieldsSet(&csr.ObjectMeta, false), fields.Set{
		"spec.signerName": csr.Spec.SignerName,
	})
}

// NewStorage returns the storage of certificatesigningrequests (short
// name "csr"). As upstream, the main resource takes the request and fills
// in who asked for it; its spec and status never change after that.
// certificatesigningrequests/approval changes only status.conditions (to
// approve or deny), certificatesigningrequests/status the rest of the
// status (the certificate, Failed) but not the approval.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	strategy := &typed.Strategy[*certificatesv1.CertificateSigningRequest]{
		ObjectTyper:         typer,
		NameGenerator:       names.SimpleNameGenerator,
		UnconditionalUpdate: true,
		PrepareCreate:       PrepareForCreate,
		PrepareUpdateFn: func(_ context.Context, csr, old *certificatesv1.CertificateSigningRequest) {
			csr.Spec = old.Spec
			csr.Status = old.Status
		},
		ValidateCreate: func(_ context.Context, csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
			return Validate(csr)
		},
		ValidateUpdateFn: func(_ context.Context, csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
			return ValidateUpdate(csr, old)
		},
		ResetFields: map[fieldpath.APIVersion]*fieldpath.Set{
			resetVersion: fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status")),
		},
	}
	store, err := typed.Resource[*certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequestList]{
		GroupResource: certificatesv1.Resource("certificatesigningrequests"),
		Singular:      "certificatesigningrequest",
		New:           func() *certificatesv1.CertificateSigningRequest { return &certificatesv1.CertificateSigningRequest{} },
		NewList: func() *certificatesv1.CertificateSigningRequestList {
			return &certificatesv1.CertificateSigningRequestList{}
		},
		Strategy: strategy,
		Table:    TableConvertor(),
		Fields:   Fields,
	}.NewStore(optsGetter)
	if err != nil {
		return nil, err
	}

	status := *strategy
	status.PrepareUpdateFn = func(_ context.Context, csr, old *certificatesv1.CertificateSigningRequest) {
		PrepareStatusUpdate(csr, old, metav1.Now())
	}
	status.ValidateUpdateFn = func(_ context.Context, csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
		return ValidateStatusUpdate(csr, old)
	}
	status.ResetFields = map[fieldpath.APIVersion]*fieldpath.Set{
		resetVersion: fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status", "conditions")),
	}

	approval := *strategy
	approval.PrepareUpdateFn = func(_ context.Context, csr, old *certificatesv1.CertificateSigningRequest) {
		PrepareApprovalUpdate(csr, old, metav1.Now())
	}
	approval.ValidateUpdateFn = func(_ context.Context, csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
		return ValidateApprovalUpdate(csr, old)
	}
	approval.ResetFields = map[fieldpath.APIVersion]*fieldpath.Set{
		resetVersion: fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status", "certificate")),
	}

	return &Storage{
		CertificateSigningRequest: typed.WithShortNames(store, "csr"),
		Approval:                  typed.NewSubresource(store, &approval),
		Status:                    typed.NewSubresource(store, &status),
	}, nil
}

// PrepareForCreate replaces whatever the client said about the requestor
// with the authenticated user of the request, and clears the status: a
// request cannot be created approved or signed.
func PrepareForCreate(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) {
	csr.Spec.Username = ""
	csr.Spec.UID = ""
	csr.Spec.Groups = nil
	csr.Spec.Extra = nil
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		csr.Spec.Username = u.GetName()
		csr.Spec.UID = u.GetUID()
		csr.Spec.Groups = u.GetGroups()
		if extra := u.GetExtra(); len(extra) > 0 {
			csr.Spec.Extra = make(map[string]certificatesv1.ExtraValue, len(extra))
			for k, v := range extra {
				csr.Spec.Extra[k] = v
			}
		}
	}
	csr.Status = certificatesv1.CertificateSigningRequestStatus{}
}

// PrepareStatusUpdate keeps the spec and the Approved and Denied
// conditions of old (adding or removing one is left for validation to
// refuse), and stamps the condition times missing from csr with now.
func PrepareStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest, now metav1.Time) {
	csr.Spec = old.Spec
	preserveConditions(csr, old, certificatesv1.CertificateApproved)
	preserveConditions(csr, old, certificatesv1.CertificateDenied)
	stampConditions(csr, old, now)
}

// PrepareApprovalUpdate takes only the conditions of csr, with their
// missing times stamped with now; spec and the rest of status are old's.
func PrepareApprovalUpdate(csr, old *certificatesv1.CertificateSigningRequest, now metav1.Time) {
	stampConditions(csr, old, now)
	conditions := csr.Status.Conditions
	csr.Spec = old.Spec
	csr.Status = old.Status
	csr.Status.Conditions = conditions
}

// preserveConditions copies old's conditions of type t over csr's when
// both have the same number of them.
func preserveConditions(csr, old *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) {
	oldIndices, newIndices := conditionIndices(old, t), conditionIndices(csr, t)
	if len(oldIndices) != len(newIndices) {
		return
	}
	for i, oldIndex := range oldIndices {
		csr.Status.Conditions[newIndices[i]] = old.Status.Conditions[oldIndex]
	}
}

func conditionIndices(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []int {
	var indices []int
	for i, c := range csr.Status.Conditions {
		if c.Type == t {
			indices = append(indices, i)
		}
	}
	return indices
}

// stampConditions sets a missing lastUpdateTime to now, and a missing
// lastTransitionTime to that of old's condition of the same type and
// status, or to now when old has none.
func stampConditions(csr, old *certificatesv1.CertificateSigningRequest, now metav1.Time) {
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = now
		for _, o := range old.Status.Conditions {
			if o.Type == c.Type && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
				c.LastTransitionTime = o.LastTransitionTime
				break
			}
		}
	}
}
