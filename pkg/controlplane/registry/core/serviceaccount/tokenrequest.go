package serviceaccount

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

// Token request limits, as upstream: at least ten minutes, at most 2^32
// seconds; an hour when the request does not say.
const (
	minTokenSeconds     = 10 * 60
	maxTokenSeconds     = 1 << 32
	defaultTokenSeconds = 60 * 60
)

// TokenRequestREST serves serviceaccounts/token: POST a TokenRequest, get
// back a bound token for the service account.
type TokenRequestREST struct {
	serviceAccounts rest.Getter
	secrets         rest.Getter
	issuer          registry.ServiceAccountTokenIssuer
	audiences       []string
	maxExpiration   time.Duration
}

var (
	_ rest.NamedCreater                   = &TokenRequestREST{}
	_ rest.GroupVersionKindProvider       = &TokenRequestREST{}
	_ rest.SubresourceObjectMetaPreserver = &TokenRequestREST{}
)

// NewTokenRequestREST returns the subresource. Tokens requested without
// audiences get audiences; maxExpiration (0: none) caps their lifetime.
func NewTokenRequestREST(serviceAccounts, secrets rest.Getter, issuer registry.ServiceAccountTokenIssuer, audiences []string, maxExpiration time.Duration) *TokenRequestREST {
	return &TokenRequestREST{serviceAccounts: serviceAccounts, secrets: secrets, issuer: issuer, audiences: audiences, maxExpiration: maxExpiration}
}

// New returns an empty TokenRequest.
func (r *TokenRequestREST) New() runtime.Object { return &authenticationv1.TokenRequest{} }

// Destroy does nothing: nothing is stored.
func (r *TokenRequestREST) Destroy() {}

// GroupVersionKind says the body is an authentication.k8s.io/v1
// TokenRequest, not a ServiceAccount.
func (r *TokenRequestREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")
}

// PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate keeps the
// request's metadata, as upstream does for TokenRequest.
func (r *TokenRequestREST) PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate() bool {
	return true
}

// Create issues a token for service account name.
func (r *TokenRequestREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*authenticationv1.TokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenRequest: %T", obj))
	}
	if req.Spec.ExpirationSeconds == nil {
		s := int64(defaultTokenSeconds)
		req.Spec.ExpirationSeconds = &s
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = r.audiences
	}
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	if errs := validateTokenRequest(req, name, namespace); len(errs) > 0 {
		return nil, apierrors.NewInvalid(authenticationv1.SchemeGroupVersion.WithKind("TokenRequest").GroupKind(), name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	saObj, err := r.serviceAccounts.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sa := saObj.(*corev1.ServiceAccount)
	if req.UID != "" && req.UID != sa.UID {
		return nil, apierrors.NewConflict(corev1.Resource("serviceaccounts"), name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}

	var bound *corev1.Secret
	if ref := req.Spec.BoundObjectRef; ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != "" || ref.Kind != "Secret" {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to object of type %s, %s: only v1 Secrets are supported", name, ref.APIVersion, ref.Kind))
		}
		secretObj, err := r.secrets.Get(secretContext(ctx, ref.Name), ref.Name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		bound = secretObj.(*corev1.Secret)
		if ref.UID != "" && ref.UID != bound.UID {
			return nil, apierrors.NewConflict(corev1.Resource("secrets"), ref.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
		}
		req.Spec.BoundObjectRef.UID = bound.UID
	}
	if max := int64(r.maxExpiration.Seconds()); max > 0 && *req.Spec.ExpirationSeconds > max {
		warning.AddWarning(ctx, "", fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *req.Spec.ExpirationSeconds, max))
		req.Spec.ExpirationSeconds = &max
	}
	// The response describes the service account the token is for.
	req.Name, req.Namespace, req.UID = sa.Name, sa.Namespace, sa.UID
	req.CreationTimestamp = metav1.Now()
	req.Status = authenticationv1.TokenRequestStatus{}
	if err := r.issuer.IssueToken(ctx, sa, bound, req); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return req, nil
}

// validateTokenRequest checks the request for service account name in
// namespace: its metadata, if set, must name that account.
func validateTokenRequest(req *authenticationv1.TokenRequest, name, namespace string) field.ErrorList {
	var errs field.ErrorList
	if req.Name != "" && req.Name != name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified"))
	}
	if req.Namespace != "" && req.Namespace != namespace {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified"))
	}
	fld := field.NewPath("spec", "expirationSeconds")
	switch s := *req.Spec.ExpirationSeconds; {
	case s < minTokenSeconds:
		errs = append(errs, field.Invalid(fld, s, "may not specify a duration less than 10 minutes"))
	case s > maxTokenSeconds:
		errs = append(errs, field.Invalid(fld, s, "may not specify a duration larger than 2^32 seconds"))
	}
	if ref := req.Spec.BoundObjectRef; ref != nil && ref.Name == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "boundObjectRef", "name"), ""))
	}
	return errs
}

// secretContext returns ctx for reading the bound Secret: the registry
// names the resource of a NotFound error after the request's, which is
// serviceaccounts/token here, so the request info says secrets instead.
func secretContext(ctx context.Context, name string) context.Context {
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok {
		return ctx
	}
	secret := *info
	secret.Verb, secret.APIGroup, secret.Resource, secret.Subresource, secret.Name = "get", "", "secrets", "", name
	return genericapirequest.WithRequestInfo(ctx, &secret)
}
