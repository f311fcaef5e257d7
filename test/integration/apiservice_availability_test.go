package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	certutil "k8s.io/client-go/util/cert"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/serviceresolver"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// svcBackend serves handler over HTTPS on a free loopback port with a
// certificate for dnsName (<service>.<namespace>.svc, the TLS server name
// callers of a service reference use); it returns the address, the CA
// bundle to trust and a stop function.
func svcBackend(t *testing.T, dnsName string, handler http.Handler) (addr string, caBundle []byte, stop func()) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(dnsName, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			_ = srv.Close()
		}
	}
	t.Cleanup(stop)
	return ln.Addr().String(), certPEM, stop
}

// discoveryBackend is the smallest aggregated API server: discovery of
// wardle.example.com/v1alpha1, as service wardle/api.
func discoveryBackend(t *testing.T) (addr string, caBundle []byte, stop func()) {
	return svcBackend(t, "api.wardle.svc", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/wardle.example.com/v1alpha1" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "wardle.example.com/v1alpha1",
			APIResources: []metav1.APIResource{{Name: "flunders", Kind: "Flunder", Namespaced: true, Verbs: metav1.Verbs{"get", "list"}}},
		})
	}))
}

func availableCondition(s *apiregistrationv1.APIService) *apiregistrationv1.APIServiceCondition {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == apiregistrationv1.Available {
			return &s.Status.Conditions[i]
		}
	}
	return nil
}

// TestRemoteAPIServiceAvailability: an APIService whose service reference
// is mapped in ConfigMap kube-system/service-addresses becomes Available
// (upstream's remote availability controller, checking discovery through
// the resolver with the front-proxy identity), turns False with
// FailedDiscoveryCheck when its backend dies; an unknown service is
// ServiceNotFound and an unmapped port says how to map it.
func TestRemoteAPIServiceAvailability(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	addr, caBundle, stopBackend := discoveryBackend(t)

	if _, err := s.Client.CoreV1().ConfigMaps(serviceresolver.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: serviceresolver.ConfigMapName},
		Data:       map[string]string{serviceresolver.Key("wardle", "api", 443): addr},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	agg := aggregatorclient.NewForConfigOrDie(s.AdminConfig).ApiregistrationV1().APIServices()
	port := int32(443)
	apiService := func(name, group, svc string) *apiregistrationv1.APIService {
		return &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiregistrationv1.APIServiceSpec{
				Group: group, Version: "v1alpha1",
				Service:              &apiregistrationv1.ServiceReference{Namespace: "wardle", Name: svc, Port: &port},
				CABundle:             caBundle,
				GroupPriorityMinimum: 1000, VersionPriority: 15,
			},
		}
	}
	for _, a := range []*apiregistrationv1.APIService{
		apiService("v1alpha1.wardle.example.com", "wardle.example.com", "api"),
		apiService("v1alpha1.other.example.com", "other.example.com", "missing"),
	} {
		if _, err := agg.Create(ctx, a, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	waitFor := func(name string, status apiregistrationv1.ConditionStatus, reason, message string, timeout time.Duration) {
		t.Helper()
		var last *apiregistrationv1.APIServiceCondition
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			got, err := agg.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			last = availableCondition(got)
			return last != nil && last.Status == status && last.Reason == reason && strings.Contains(last.Message, message), nil
		})
		if err != nil {
			t.Fatalf("%s: want Available=%s %s %q, last %+v", name, status, reason, message, last)
		}
	}
	waitFor("v1alpha1.wardle.example.com", apiregistrationv1.ConditionTrue, "Passed", "all checks passed", 30*time.Second)
	// A service neither mapped nor resolvable by DNS is not there, as
	// upstream says of a missing Service; a mapped service without the
	// port asked for fails its discovery check, saying what to add.
	waitFor("v1alpha1.other.example.com", apiregistrationv1.ConditionFalse, "ServiceNotFound",
		`service/missing in "wardle" is not present`, 30*time.Second)
	wrongPort := apiService("v1alpha1.port.example.com", "port.example.com", "api")
	p := int32(8443)
	wrongPort.Spec.Service.Port = &p
	if _, err := agg.Create(ctx, wrongPort, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("v1alpha1.port.example.com", apiregistrationv1.ConditionFalse, "FailedDiscoveryCheck",
		"add key api.wardle.8443 (value host:port) to ConfigMap kube-system/service-addresses", 30*time.Second)

	// The aggregator proxies to the backend through the same resolver.
	var status int
	s.Client.Discovery().RESTClient().Get().AbsPath("/apis/wardle.example.com/v1alpha1").Do(ctx).StatusCode(&status)
	if status != http.StatusOK {
		t.Errorf("GET /apis/wardle.example.com/v1alpha1 through the aggregator: %d", status)
	}

	// A dead backend is noticed at the next check (every 30 s).
	stopBackend()
	waitFor("v1alpha1.wardle.example.com", apiregistrationv1.ConditionFalse, "FailedDiscoveryCheck", "failing or missing response from https://"+addr, 70*time.Second)
}

// TestWebhookByServiceReference: an admission webhook given as a service
// reference fails closed, saying how to map it, until ConfigMap
// kube-system/service-addresses maps it; then it is called (TLS server
// name hook.wardle.svc) without a restart.
func TestWebhookByServiceReference(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	addr, caBundle, _ := svcBackend(t, "hook.wardle.svc", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		whReview(w, r, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "denied by hook.wardle"}}
		})
	}))
	whNamespace(t, s.Client, "svc-ref", "on")
	cc := admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: "wardle", Name: "hook", Path: ptr.To("/deny")},
		CABundle: caBundle,
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "by-service"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{whValidating("deny.wardle.example.com", cc, "on", admissionregistrationv1.Fail)},
	}
	if _, err := s.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	whEventually(t, "an unmapped service reference fails closed with how to map it", func(name string) error {
		_, err := whCreateConfigMap(s.Client, "svc-ref", name, nil)
		return err
	}, func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "add key hook.wardle.443 (value host:port) to ConfigMap kube-system/service-addresses")
	})

	if _, err := s.Client.CoreV1().ConfigMaps(serviceresolver.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: serviceresolver.ConfigMapName},
		Data:       map[string]string{serviceresolver.Key("wardle", "hook", 443): addr},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	whEventually(t, "the mapped webhook is called", func(name string) error {
		_, err := whCreateConfigMap(s.Client, "svc-ref", name, nil)
		return err
	}, func(err error) bool {
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "denied by hook.wardle")
	})
}

// TestConversionWebhookByServiceReference: a CRD conversion webhook given
// as a service reference is reached through ConfigMap
// kube-system/service-addresses, like APIServices and admission webhooks.
func TestConversionWebhookByServiceReference(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	addr, caBundle, _ := svcBackend(t, "conv.wardle.svc", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			var obj map[string]any
			_ = json.Unmarshal(raw.Raw, &obj)
			obj["apiVersion"] = review.Request.DesiredAPIVersion
			if review.Request.DesiredAPIVersion == "conv.example.dev/v2" {
				obj["converted"] = "by conv.wardle"
			} else {
				delete(obj, "converted")
			}
			b, _ := json.Marshal(obj)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
		}
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	if _, err := s.Client.CoreV1().ConfigMaps(serviceresolver.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: serviceresolver.ConfigMapName},
		Data:       map[string]string{serviceresolver.Key("wardle", "conv", 443): addr},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.conv.example.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "conv.example.dev", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v2", Served: true, Schema: schema},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{
						Service:  &apiextensionsv1.ServiceReference{Namespace: "wardle", Name: "conv", Path: ptr.To("/convert")},
						CABundle: caBundle,
					},
				},
			},
		},
	}
	if err := testserver.InstallCRDs(ctx, s.AdminConfig, 30*time.Second, crd); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	gadget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "conv.example.dev/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"}}}
	if _, err := dyn.Resource(k8sschema.GroupVersionResource{Group: "conv.example.dev", Version: "v1", Resource: "gadgets"}).Namespace("default").Create(ctx, gadget, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(k8sschema.GroupVersionResource{Group: "conv.example.dev", Version: "v2", Resource: "gadgets"}).Namespace("default").Get(ctx, "g", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading v2 through the conversion webhook: %v", err)
	}
	if got.Object["converted"] != "by conv.wardle" {
		t.Fatalf("v2 object was not converted by the webhook: %v", got.Object)
	}
}
