package serviceaccount

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// objects is a rest.Getter over namespace/name.
type objects struct {
	resource schema.GroupResource
	byName   map[string]runtime.Object
}

func (o objects) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if obj, ok := o.byName[genericapirequest.NamespaceValue(ctx)+"/"+name]; ok {
		return obj.DeepCopyObject(), nil
	}
	return nil, apierrors.NewNotFound(o.resource, name)
}

// recordingIssuer remembers what it was asked to issue.
type recordingIssuer struct {
	sa    *corev1.ServiceAccount
	bound *corev1.Secret
	spec  authenticationv1.TokenRequestSpec
	err   error
}

func (i *recordingIssuer) IssueToken(_ context.Context, sa *corev1.ServiceAccount, bound *corev1.Secret, req *authenticationv1.TokenRequest) error {
	if i.err != nil {
		return i.err
	}
	i.sa, i.bound, i.spec = sa, bound, *req.Spec.DeepCopy()
	req.Status = authenticationv1.TokenRequestStatus{
		Token:               "token-for-" + sa.Name,
		ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second)),
	}
	return nil
}

func seconds(s int64) *int64 { return &s }

func TestTokenRequestREST(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "robot", UID: "sa-uid"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "secret-uid"}}
	sas := objects{corev1.Resource("serviceaccounts"), map[string]runtime.Object{"ns/robot": sa}}
	secrets := objects{corev1.Resource("secrets"), map[string]runtime.Object{"ns/s": secret}}
	apiAudiences := []string{"https://gcp.example.com"}

	for _, tc := range []struct {
		name       string
		sa         string
		spec       authenticationv1.TokenRequestSpec
		max        time.Duration
		issuerErr  error
		wantCode   int32  // 0: success
		wantField  string // a field path the 422 names
		wantSpec   *authenticationv1.TokenRequestSpec
		wantSecret bool
	}{
		{
			name:     "defaults",
			sa:       "robot",
			wantSpec: &authenticationv1.TokenRequestSpec{Audiences: apiAudiences, ExpirationSeconds: seconds(3600)},
		},
		{
			name:     "explicit audiences and expiration",
			sa:       "robot",
			spec:     authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: seconds(600)},
			wantSpec: &authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: seconds(600)},
		},
		{
			name:     "capped at the max expiration",
			sa:       "robot",
			spec:     authenticationv1.TokenRequestSpec{ExpirationSeconds: seconds(48 * 3600)},
			max:      24 * time.Hour,
			wantSpec: &authenticationv1.TokenRequestSpec{Audiences: apiAudiences, ExpirationSeconds: seconds(24 * 3600)},
		},
		{
			name:     "below the max is kept",
			sa:       "robot",
			spec:     authenticationv1.TokenRequestSpec{ExpirationSeconds: seconds(1200)},
			max:      time.Hour,
			wantSpec: &authenticationv1.TokenRequestSpec{Audiences: apiAudiences, ExpirationSeconds: seconds(1200)},
		},
		{
			name:      "shorter than ten minutes",
			sa:        "robot",
			spec:      authenticationv1.TokenRequestSpec{ExpirationSeconds: seconds(599)},
			wantCode:  http.StatusUnprocessableEntity,
			wantField: "spec.expirationSeconds",
		},
		{
			name:      "longer than 2^32 seconds",
			sa:        "robot",
			spec:      authenticationv1.TokenRequestSpec{ExpirationSeconds: seconds(1<<32 + 1)},
			wantCode:  http.StatusUnprocessableEntity,
			wantField: "spec.expirationSeconds",
		},
		{
			name:     "missing service account",
			sa:       "ghost",
			wantCode: http.StatusNotFound,
		},
		{
			name: "bound to a secret",
			sa:   "robot",
			spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s"}},
			wantSpec: &authenticationv1.TokenRequestSpec{Audiences: apiAudiences, ExpirationSeconds: seconds(3600),
				BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "secret-uid"}},
			wantSecret: true,
		},
		{
			name: "bound to a secret with its UID",
			sa:   "robot",
			spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "secret-uid"}},
			wantSpec: &authenticationv1.TokenRequestSpec{Audiences: apiAudiences, ExpirationSeconds: seconds(3600),
				BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "secret-uid"}},
			wantSecret: true,
		},
		{
			name:     "bound secret UID mismatch",
			sa:       "robot",
			spec:     authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "old-uid"}},
			wantCode: http.StatusConflict,
		},
		{
			name:     "bound secret missing",
			sa:       "robot",
			spec:     authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "gone"}},
			wantCode: http.StatusNotFound,
		},
		{
			name:      "bound secret without a name",
			sa:        "robot",
			spec:      authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret"}},
			wantCode:  http.StatusUnprocessableEntity,
			wantField: "spec.boundObjectRef.name",
		},
		{
			name:     "bound to a pod",
			sa:       "robot",
			spec:     authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p"}},
			wantCode: http.StatusBadRequest,
		},
		{
			name:     "bound to an object of another group",
			sa:       "robot",
			spec:     authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "example.com/v1", Kind: "Secret", Name: "s"}},
			wantCode: http.StatusBadRequest,
		},
		{
			name:     "malformed apiVersion",
			sa:       "robot",
			spec:     authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "a/b/c", Kind: "Secret", Name: "s"}},
			wantCode: http.StatusBadRequest,
		},
		{
			name:      "issuer failure",
			sa:        "robot",
			issuerErr: errors.New("hsm unplugged"),
			wantCode:  http.StatusInternalServerError,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			issuer := &recordingIssuer{err: tc.issuerErr}
			r := NewTokenRequestREST(sas, secrets, issuer, apiAudiences, tc.max)
			ctx := genericapirequest.WithNamespace(context.Background(), "ns")
			out, err := r.Create(ctx, tc.sa, &authenticationv1.TokenRequest{Spec: tc.spec}, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			if tc.wantCode != 0 {
				checkRejected(t, err, issuer, tc.wantCode, tc.wantField)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkIssued(t, out, issuer, tc.wantSecret, *tc.wantSpec)
		})
	}
}

// checkRejected checks that a TokenRequest was refused with wantCode, a
// 422 naming wantField (when set), before it reached the issuer.
func checkRejected(t *testing.T, err error, issuer *recordingIssuer, wantCode int32, wantField string) {
	t.Helper()
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("err = %v (%T), want an API status %d", err, err, wantCode)
	}
	if code := status.Status().Code; code != wantCode {
		t.Fatalf("code %d (%v), want %d", code, err, wantCode)
	}
	if wantField != "" {
		var fields []string
		if d := status.Status().Details; d != nil {
			for _, c := range d.Causes {
				fields = append(fields, c.Field)
			}
		}
		if !strings.Contains(strings.Join(fields, ","), wantField) {
			t.Fatalf("causes name %q, want %q", fields, wantField)
		}
	}
	if issuer.sa != nil {
		t.Fatal("a rejected request reached the issuer")
	}
}

// checkIssued checks that a TokenRequest got robot's token, issued for
// wantSpec and bound to the secret when wantSecret.
func checkIssued(t *testing.T, out runtime.Object, issuer *recordingIssuer, wantSecret bool, wantSpec authenticationv1.TokenRequestSpec) {
	t.Helper()
	tr := out.(*authenticationv1.TokenRequest)
	if tr.Status.Token != "token-for-robot" || tr.Status.ExpirationTimestamp.IsZero() {
		t.Fatalf("status %+v", tr.Status)
	}
	if issuer.sa == nil || issuer.sa.UID != "sa-uid" {
		t.Fatalf("issued for %+v", issuer.sa)
	}
	if (issuer.bound != nil) != wantSecret || (wantSecret && issuer.bound.UID != "secret-uid") {
		t.Fatalf("bound %+v, want a secret: %v", issuer.bound, wantSecret)
	}
	if got := issuer.spec; !equalSpec(got, wantSpec) {
		t.Fatalf("issued spec %+v, want %+v", got, wantSpec)
	}
}

func equalSpec(a, b authenticationv1.TokenRequestSpec) bool {
	if strings.Join(a.Audiences, ",") != strings.Join(b.Audiences, ",") {
		return false
	}
	if (a.ExpirationSeconds == nil) != (b.ExpirationSeconds == nil) || (a.ExpirationSeconds != nil && *a.ExpirationSeconds != *b.ExpirationSeconds) {
		return false
	}
	if (a.BoundObjectRef == nil) != (b.BoundObjectRef == nil) {
		return false
	}
	return a.BoundObjectRef == nil || *a.BoundObjectRef == *b.BoundObjectRef
}

func TestTokenRequestRESTKind(t *testing.T) {
	r := NewTokenRequestREST(nil, nil, &recordingIssuer{}, nil, 0)
	if _, ok := r.New().(*authenticationv1.TokenRequest); !ok {
		t.Fatalf("New() = %T", r.New())
	}
	if gvk := r.GroupVersionKind(corev1.SchemeGroupVersion); gvk != authenticationv1.SchemeGroupVersion.WithKind("TokenRequest") {
		t.Fatalf("kind %v", gvk)
	}
	if _, err := r.Create(context.Background(), "robot", &corev1.ServiceAccount{}, nil, nil); !apierrors.IsBadRequest(err) {
		t.Fatalf("a body that is not a TokenRequest: %v, want 400", err)
	}
}

func TestTokenRequestRESTMetadata(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "robot", UID: "sa-uid"}}
	r := NewTokenRequestREST(objects{corev1.Resource("serviceaccounts"), map[string]runtime.Object{"ns/robot": sa}}, objects{}, &recordingIssuer{}, []string{"aud"}, 0)
	ctx := genericapirequest.WithNamespace(context.Background(), "ns")
	create := func(meta metav1.ObjectMeta) (*authenticationv1.TokenRequest, error) {
		obj, err := r.Create(ctx, "robot", &authenticationv1.TokenRequest{ObjectMeta: meta}, nil, &metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		return obj.(*authenticationv1.TokenRequest), nil
	}
	out, err := create(metav1.ObjectMeta{})
	if err != nil || out.Name != "robot" || out.Namespace != "ns" || out.UID != "sa-uid" || out.CreationTimestamp.IsZero() {
		t.Fatalf("response metadata %+v, %v", out, err)
	}
	if _, err := create(metav1.ObjectMeta{Name: "other"}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.name") {
		t.Errorf("other name: want 422 on metadata.name, got %v", err)
	}
	if _, err := create(metav1.ObjectMeta{Namespace: "other"}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.namespace") {
		t.Errorf("other namespace: want 422 on metadata.namespace, got %v", err)
	}
	if _, err := create(metav1.ObjectMeta{UID: "old-uid"}); !apierrors.IsConflict(err) {
		t.Errorf("other UID: want 409, got %v", err)
	}
}
