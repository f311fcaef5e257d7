package apiserver

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core"
)

// jsonGadgetGroup is gadgetGroup stored as JSON.
type jsonGadgetGroup struct{ gadgetGroup }

func (jsonGadgetGroup) StorageMediaType() string { return runtime.ContentTypeJSON }

// protobufGadgetGroup is gadgetGroup asking for protobuf storage.
type protobufGadgetGroup struct{ gadgetGroup }

func (protobufGadgetGroup) StorageMediaType() string { return runtime.ContentTypeProtobuf }

// TestCheckStorageMediaTypes: a group of types without protobuf
// marshalling, stored as protobuf, is an error before anything starts that
// names the kind and registry.StorageMediaTyper, the fix; stored as JSON
// (by the group or by --storage-media-type) it is fine, and so are gcp's
// own generated types as protobuf.
func TestCheckStorageMediaTypes(t *testing.T) {
	const protobuf = "application/vnd.kubernetes.protobuf"
	for _, c := range []struct {
		name      string
		group     registry.APIGroup
		mediaType string
		want      []string // in the error; none: no error
	}{
		{"default protobuf", gadgetGroup{}, protobuf, []string{"gadgets.example.dev/v1, Kind=gadget", "registry.StorageMediaTyper", "runtime.ContentTypeJSON"}},
		{"group asks for protobuf", protobufGadgetGroup{}, protobuf, []string{"gadgets.example.dev/v1, Kind=gadget", "StorageMediaType returns " + protobuf, "runtime.ContentTypeJSON"}},
		{"group stores JSON", jsonGadgetGroup{}, protobuf, nil},
		{"--storage-media-type JSON", gadgetGroup{}, runtime.ContentTypeJSON, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			groups := []registry.APIGroup{core.APIGroup{}, c.group}
			scheme, err := NewScheme(groups)
			if err != nil {
				t.Fatal(err)
			}
			err = checkStorageMediaTypes(scheme, groups, c.mediaType)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one naming %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "ConfigMap") {
				t.Errorf("error %q names gcp's own kinds", err)
			}
		})
	}
}
