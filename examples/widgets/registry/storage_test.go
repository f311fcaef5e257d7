package registry

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	v1 "example.dev/widgets/apis/widgets/v1"
)

// TestStrategies: the main resource never writes the status, the status
// subresource never writes the spec, and only a spec change is a new
// generation.
func TestStrategies(t *testing.T) {
	ctx := context.Background()
	main := MainStrategy(runtime.NewScheme())
	status := StatusStrategy(main)

	w := &v1.Widget{
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "default"},
		Spec:       v1.WidgetSpec{Size: 3, Color: v1.ColorRed},
		Status:     v1.WidgetStatus{Phase: v1.PhaseReady},
	}
	main.PrepareForCreate(ctx, w)
	if w.Status.Phase != "" || w.Generation != 1 {
		t.Fatalf("create: status %+v, generation %d; want no status, generation 1", w.Status, w.Generation)
	}

	old := w.DeepCopy()
	update := w.DeepCopy()
	update.Spec.Size = 4
	update.Status.Phase = v1.PhaseReady
	main.PrepareForUpdate(ctx, update, old)
	if update.Status.Phase != "" || update.Generation != 2 {
		t.Errorf("spec update: status %+v, generation %d; want no status, generation 2", update.Status, update.Generation)
	}

	statusUpdate := w.DeepCopy()
	statusUpdate.Spec.Size = 50
	statusUpdate.Status.Phase = v1.PhaseReady
	status.PrepareForUpdate(ctx, statusUpdate, old)
	if statusUpdate.Spec.Size != 3 || statusUpdate.Status.Phase != v1.PhaseReady || statusUpdate.Generation != 1 {
		t.Errorf("status update: spec %+v, status %+v, generation %d; want old spec, new status, generation 1",
			statusUpdate.Spec, statusUpdate.Status, statusUpdate.Generation)
	}

	gv := v1.SchemeGroupVersion.String()
	if got := main.GetResetFields()[fieldpath.APIVersion(gv)].String(); got != ".status" {
		t.Errorf("main reset fields %q, want .status", got)
	}
	if got := status.GetResetFields()[fieldpath.APIVersion(gv)].String(); got != ".spec" {
		t.Errorf("status reset fields %q, want .spec", got)
	}
}

// TestInstallSchemeDefaultsColor: decoding a widget without a color
// through the scheme gives it blue.
func TestInstallSchemeDefaultsColor(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := (APIGroup{}).InstallScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	data := []byte(`{"apiVersion":"widgets.example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":2}}`)
	obj, _, err := codecs.UniversalDecoder(v1.SchemeGroupVersion).Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*v1.Widget).Spec.Color; got != v1.ColorBlue {
		t.Errorf("color %q, want %q", got, v1.ColorBlue)
	}
}
