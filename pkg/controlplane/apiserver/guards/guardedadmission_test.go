package guards

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gcp-project/gcp/pkg/controlplane/nesting"
)

// TestTooWide: an object wider than nesting.Width allows is refused when it
// is created, or when it replaces a narrower one, but not when it replaces
// one at least as wide (stored before the limit), so that one can be
// written, and shrunk.
func TestTooWide(t *testing.T) {
	configMap := func(keys int) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{Data: map[string]string{}}
		for i := range keys {
			cm.Data[fmt.Sprintf("k%06d", i)] = ""
		}
		return cm
	}
	at, past, further := configMap(nesting.Width), configMap(nesting.Width+1), configMap(nesting.Width+2)
	for _, tt := range []struct {
		name     string
		obj, old runtime.Object
		want     bool
	}{
		{"created at the width", at, nil, false},
		{"created past it", past, nil, true},
		{"grown past it", past, at, true},
		{"grown further past it", further, past, true},
		{"kept as wide", past, past, false},
		{"shrunk, still past it", past, further, false},
	} {
		if got := tooWide(tt.obj, tt.old); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
