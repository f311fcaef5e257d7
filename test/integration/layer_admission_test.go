package integration

import (
	"context"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	gcpadmission "github.com/gcp-project/gcp/pkg/controlplane/admission"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// denyLabelled refuses configmaps labelled deny=true: a layer's own
// validating admission plugin.
type denyLabelled struct{ *admission.Handler }

func (denyLabelled) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != corev1.Resource("configmaps") {
		return nil
	}
	if cm, ok := a.GetObject().(*corev1.ConfigMap); ok && cm.Labels["deny"] == "true" {
		return admission.NewForbidden(a, errDenied)
	}
	return nil
}

var errDenied = &deniedError{}

type deniedError struct{}

func (*deniedError) Error() string {
	return "configmaps labelled deny=true are refused by DenyLabelled"
}

func denyLayer() layering.Layer {
	return layering.Layer{Name: "deny", AdmissionPlugins: []gcpadmission.Plugin{{
		Name: "DenyLabelled",
		Factory: func(io.Reader) (admission.Interface, error) {
			return denyLabelled{admission.NewHandler(admission.Create, admission.Update)}, nil
		},
	}}}
}

// TestLayerAdmissionPlugin: a layer brings its own admission plugin,
// which runs (403 with its message, nothing stored) and can be turned off
// with --disable-admission-plugins like gcp's own.
func TestLayerAdmissionPlugin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	denied := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "denied", Labels: map[string]string{"deny": "true"}}}

	on := testserver.Start(t, testserver.Options{Stack: layering.Generic().With(denyLayer())})
	_, err := on.Client.CoreV1().ConfigMaps("default").Create(ctx, denied, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "refused by DenyLabelled") {
		t.Fatalf("create with the plugin on: got %v, want 403 from DenyLabelled", err)
	}
	if _, err := on.Client.CoreV1().ConfigMaps("default").Get(ctx, "denied", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a denied configmap was stored: %v", err)
	}
	if _, err := on.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "allowed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("an unlabelled configmap: %v", err)
	}

	off := testserver.Start(t, testserver.Options{Stack: layering.Generic().With(denyLayer()),
		APIServer: func(o *options.Options) { o.Admission.DisablePlugins = []string{"DenyLabelled"} }})
	if _, err := off.Client.CoreV1().ConfigMaps("default").Create(ctx, denied, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create with the plugin disabled: %v", err)
	}
}
