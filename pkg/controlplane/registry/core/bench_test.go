package core_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core/configmap"
)

// The hot paths of a ConfigMap request, without the network: the
// request body's decode (with conversion and defaulting, as the handler
// does), validation, and the encodes for storage (protobuf) and for the
// answer (JSON and protobuf), single objects and a 3,000-item list.
// `go test ./pkg/controlplane/registry/core -run '^$' -bench . -benchmem`

func codecs(b *testing.B) serializer.CodecFactory {
	b.Helper()
	scheme, err := apiserver.NewScheme([]registry.APIGroup{core.APIGroup{}})
	if err != nil {
		b.Fatal(err)
	}
	return serializer.NewCodecFactory(scheme)
}

func benchConfigMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("cm-%d", i), Namespace: "default", UID: "5d3b5b3e-2f0c-4f6e-9d1c-6d3a1f2b7c8e", ResourceVersion: "12345",
			Labels:            map[string]string{"app": "bench", "tier": "backend"},
			Annotations:       map[string]string{"note": strings.Repeat("a", 64)},
			CreationTimestamp: metav1.Unix(1700000000, 0),
		},
		Data: map[string]string{"config.yaml": strings.Repeat("key: value\n", 20), "k": "v"},
	}
}

// serializerFor returns the codec factory's serializer for mediaType.
func serializerFor(b *testing.B, c serializer.CodecFactory, mediaType string) runtime.Serializer {
	b.Helper()
	info, ok := runtime.SerializerInfoForMediaType(c.SupportedMediaTypes(), mediaType)
	if !ok {
		b.Fatalf("no serializer for %s", mediaType)
	}
	return info.Serializer
}

func BenchmarkDecodeConfigMap(b *testing.B) {
	c := codecs(b)
	internal := schema.GroupVersion{Version: runtime.APIVersionInternal}
	for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		b.Run(mediaType, func(b *testing.B) {
			s := serializerFor(b, c, mediaType)
			var buf bytes.Buffer
			if err := s.Encode(benchConfigMap(0), &buf); err != nil {
				b.Fatal(err)
			}
			decoder := c.DecoderToVersion(s, internal)
			b.ReportAllocs()
			b.SetBytes(int64(buf.Len()))
			for b.Loop() {
				if _, _, err := decoder.Decode(buf.Bytes(), nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeConfigMap(b *testing.B) {
	c := codecs(b)
	for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		b.Run(mediaType, func(b *testing.B) {
			encoder := c.EncoderForVersion(serializerFor(b, c, mediaType), corev1.SchemeGroupVersion)
			cm := benchConfigMap(0)
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := encoder.Encode(cm, &buf); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}

func BenchmarkEncodeConfigMapList3000(b *testing.B) {
	c := codecs(b)
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "12345"}}
	for i := range 3000 {
		list.Items = append(list.Items, *benchConfigMap(i))
	}
	for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		b.Run(mediaType, func(b *testing.B) {
			encoder := c.EncoderForVersion(serializerFor(b, c, mediaType), corev1.SchemeGroupVersion)
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := encoder.Encode(list, &buf); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}

func BenchmarkValidateConfigMap(b *testing.B) {
	cm := benchConfigMap(0)
	b.ReportAllocs()
	for b.Loop() {
		if errs := configmap.Validate(cm); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
