package integration

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers/namespace"
	"github.com/gcp-project/gcp/pkg/testserver"
	"github.com/gcp-project/gcp/test/freeport"
	"github.com/gcp-project/gcp/test/poll"
)

// TestConversionWebhookDown: when a CRD's conversion webhook cannot be
// reached, reads that need a conversion fail naming the webhook and why
// it failed, not calling the stored objects corrupt; so do the
// conditions of a namespace whose deletion needs them.
func TestConversionWebhookDown(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	runControllers(t, s, namespace.Descriptor())
	ctx := context.Background()

	// The webhook comes back on its port below: one from freeport, which
	// no other connection takes as its local port while it is closed.
	hook := httptest.NewUnstartedServer(http.HandlerFunc(convertByRenaming))
	_ = hook.Listener.Close()
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", freeport.Get(t)))
	if err != nil {
		t.Fatal(err)
	}
	hook.Listener = l
	hook.StartTLS()
	t.Cleanup(hook.Close)
	url := hook.URL + "/convert"
	preserve := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gears.down.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "down.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gears", Kind: "Gear"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: preserve},
				{Name: "v2", Served: true, Schema: preserve},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{
						URL:      &url,
						CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}),
					},
				},
			},
		},
	}
	if err := testserver.InstallCRDs(ctx, s.AdminConfig, 30*time.Second, crd); err != nil {
		t.Fatal(err)
	}
	const ns = "gears"
	createNamespace(t, s.Client, ns)
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	v1 := dyn.Resource(schema.GroupVersionResource{Group: "down.example.com", Version: "v1", Resource: "gears"}).Namespace(ns)
	v2 := dyn.Resource(schema.GroupVersionResource{Group: "down.example.com", Version: "v2", Resource: "gears"}).Namespace(ns)
	if _, err := v1.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "down.example.com/v1", "kind": "Gear", "metadata": map[string]any{"name": "g"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Get(ctx, "g", metav1.GetOptions{}); err != nil {
		t.Fatalf("reading v2 through the webhook while it is up: %v", err)
	}

	// A watch of v2 from the watch cache, open while the webhook goes down.
	list, err := v2.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	open, err := v2.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(open.Stop)

	hook.Close()
	// An object written in the stored version needs no webhook; its
	// reads in the other version do.
	if _, err := v1.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "down.example.com/v1", "kind": "Gear", "metadata": map[string]any{"name": "g2"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantMessage := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s with the conversion webhook down: no error", what)
		}
		msg := err.Error()
		t.Logf("%s: %d %s", what, statusCode(err), msg)
		if strings.Contains(msg, "corrupt") || !strings.Contains(msg, "conversion webhook") || !strings.Contains(msg, url) ||
			!namesNetworkFailure(msg) {
			t.Fatalf("%s with the conversion webhook down: %q; want it to name the conversion webhook %s and the failure, not call the object corrupt", what, msg, url)
		}
		if code := statusCode(err); code < 500 {
			t.Fatalf("%s with the conversion webhook down: %d, want a 5xx (a server-side fault)", what, code)
		}
	}
	_, err = v2.Get(ctx, "g2", metav1.GetOptions{})
	wantMessage("get v2", err)
	_, err = v2.List(ctx, metav1.ListOptions{})
	wantMessage("list v2", err)
	// Served from the watch cache, whose watch of etcd stops at g2: once
	// it has tried g2, which takes the cache a moment, nothing it serves
	// says the stale answer is all there is, unless gcp does.
	poll.Until(t, 50*time.Millisecond, 10*time.Second, func() error {
		var l *unstructured.UnstructuredList
		if l, err = v2.List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
			return nil
		}
		if len(l.Items) > 1 {
			t.Fatalf("list v2 from the watch cache has g2, which needs the webhook")
		}
		return errors.New("list v2 from the watch cache (resourceVersion=0) still answers, without g2")
	})
	wantMessage("list v2 from the watch cache (resourceVersion=0)", err)
	_, err = v2.Get(ctx, "g", metav1.GetOptions{ResourceVersion: "0"})
	wantMessage("get v2 from the watch cache (resourceVersion=0)", err)
	_, err = v2.List(ctx, metav1.ListOptions{ResourceVersion: "0", LabelSelector: "a=b"})
	wantMessage("list v2 from the watch cache with a label selector", err)
	// The open watch ends with an error event naming the webhook, or
	// closes; either way a new one is refused naming it.
	wantMessage("the watch of v2 open when the webhook went down", watchError(t, open))
	w, err := v2.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err == nil {
		t.Cleanup(w.Stop)
		err = watchError(t, w)
	}
	wantMessage("a new watch of v2", err)

	// The namespace controller deletes through the preferred version, v2.
	if err := s.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var cond *corev1.NamespaceCondition
	nsEventually(t, 30*time.Second, "a namespace condition about the gears", func() (bool, error) {
		n, err := s.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for i, c := range n.Status.Conditions {
			if c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "gears") {
				cond = &n.Status.Conditions[i]
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("namespace condition %s: %s", cond.Type, cond.Message)
	if strings.Contains(cond.Message, "corrupt") || !strings.Contains(cond.Message, url) {
		t.Fatalf("namespace condition %s: %q; want it to name the conversion webhook %s, not call the object corrupt", cond.Type, cond.Message, url)
	}

	// The webhook comes back at its address: the cache catches up, its
	// reads and watches work again, and the namespace goes.
	l, err = net.Listen("tcp", hook.Listener.Addr().String())
	if err != nil {
		t.Fatalf("listening again at the webhook's address: %v", err)
	}
	back := httptest.NewUnstartedServer(http.HandlerFunc(convertByRenaming))
	_ = back.Listener.Close()
	back.Listener = l
	back.StartTLS() // httptest's one certificate: the CRD's CA bundle holds
	t.Cleanup(back.Close)
	nsEventually(t, 30*time.Second, "reads and watches from the watch cache once the webhook is back", func() (bool, error) {
		if _, err := v2.List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
			return false, err
		}
		w, err := v2.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		w.Stop()
		return true, nil
	})
	nsEventually(t, 30*time.Second, "the namespace deleted", func() (bool, error) {
		_, err := s.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// watchError is the error of w's first error event, or an error saying
// that w closed without one (which wantMessage refuses); events of other
// types are skipped.
func watchError(t *testing.T, w watch.Interface) error {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return errors.New("the watch closed without an error event")
			}
			if e.Type == watch.Error {
				return apierrors.FromObject(e.Object)
			}
		case <-timeout:
			return errors.New("no error event within 30 s")
		}
	}
}

// convertByRenaming is a conversion webhook that only sets apiVersion.
func convertByRenaming(w http.ResponseWriter, r *http.Request) {
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
		b, _ := json.Marshal(obj)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
	}
	review.Response, review.Request = resp, nil
	_ = json.NewEncoder(w).Encode(review)
}

// statusCode is the HTTP status of a client's error, 0 if it has none.
func statusCode(err error) int {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return int(s.Status().Code)
	}
	return 0
}

// namesNetworkFailure reports whether msg names how the call to a webhook
// that has gone failed. A new connection is refused; one the client kept
// alive from before breaks on its next write or read, so which words
// appear depends on timing, not on gcp.
func namesNetworkFailure(msg string) bool {
	for _, s := range []string{"connection refused", "broken pipe", "connection reset", "EOF"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
