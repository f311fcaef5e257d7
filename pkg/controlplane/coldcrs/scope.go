package coldcrs

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"
	"k8s.io/apiserver/pkg/endpoints/handlers"
)

// newScope is the request scope apiextensions-apiserver gives a list or
// watch of version v of crd's resources, as far as a list or watch uses
// it: its media types (JSON, YAML, and protobuf for metadata-only answers),
// parameter codec, names and kinds. It holds nothing of the schema.
func newScope(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) *handlers.RequestScope {
	kind := kindOf(crd, v)
	parameterScheme := runtime.NewScheme()
	parameterScheme.AddUnversionedTypes(kind.GroupVersion(), &metav1.ListOptions{}, &metav1.GetOptions{}, &metav1.DeleteOptions{})
	typer := apiextensionsapiserver.UnstructuredObjectTyper{Delegate: parameterScheme, UnstructuredTyper: crdserverscheme.NewUnstructuredObjectTyper()}
	creator := unstructuredCreator{}
	serializer := negotiatedSerializer{mediaTypes: mediaTypes(creator, typer)}
	var standard []runtime.SerializerInfo
	for _, s := range serializer.mediaTypes {
		if s.MediaType != runtime.ContentTypeProtobuf {
			standard = append(standard, s)
		}
	}
	return &handlers.RequestScope{
		Namer:               handlers.ContextBasedNaming{Namer: meta.NewAccessor(), ClusterScoped: crd.Spec.Scope == apiextensionsv1.ClusterScoped},
		Serializer:          serializer,
		ParameterCodec:      runtime.NewParameterCodec(parameterScheme),
		StandardSerializers: standard,
		Creater:             creator,
		Convertor:           sameVersion{},
		Defaulter:           parameterScheme,
		Typer:               typer,
		UnsafeConvertor:     sameVersion{},
		Resource:            schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Status.AcceptedNames.Plural},
		Kind:                kind,
		HubGroupVersion:     kind.GroupVersion(),
		MetaGroupVersion:    metav1.SchemeGroupVersion,
	}
}

// mediaTypes are apiextensions-apiserver's for custom resources, built
// from the library's serializers the same way.
func mediaTypes(creator runtime.ObjectCreater, typer runtime.ObjectTyper) []runtime.SerializerInfo {
	return []runtime.SerializerInfo{
		{
			MediaType: "application/json", MediaTypeType: "application", MediaTypeSubType: "json", EncodesAsText: true,
			Serializer:       json.NewSerializerWithOptions(json.DefaultMetaFactory, creator, typer, json.SerializerOptions{StreamingCollectionsEncoding: true}),
			PrettySerializer: json.NewSerializerWithOptions(json.DefaultMetaFactory, creator, typer, json.SerializerOptions{Pretty: true}),
			StreamSerializer: &runtime.StreamSerializerInfo{
				EncodesAsText: true,
				Serializer:    json.NewSerializerWithOptions(json.DefaultMetaFactory, creator, typer, json.SerializerOptions{}),
				Framer:        json.Framer,
			},
		},
		{
			MediaType: "application/yaml", MediaTypeType: "application", MediaTypeSubType: "yaml", EncodesAsText: true,
			Serializer: json.NewSerializerWithOptions(json.DefaultMetaFactory, creator, typer, json.SerializerOptions{Yaml: true}),
		},
		{
			MediaType: runtime.ContentTypeProtobuf, MediaTypeType: "application", MediaTypeSubType: "vnd.kubernetes.protobuf",
			Serializer: protobuf.NewSerializerWithOptions(creator, typer, protobuf.SerializerOptions{StreamingCollectionsEncoding: true}),
			StreamSerializer: &runtime.StreamSerializerInfo{
				Serializer: protobuf.NewRawSerializer(creator, typer),
				Framer:     protobuf.LengthDelimitedFramer,
			},
		},
	}
}

// negotiatedSerializer encodes with apiextensions-apiserver's scheme, as
// its own custom resource serializer does; nothing is decoded.
type negotiatedSerializer struct{ mediaTypes []runtime.SerializerInfo }

func (s negotiatedSerializer) SupportedMediaTypes() []runtime.SerializerInfo { return s.mediaTypes }

func (s negotiatedSerializer) EncoderForVersion(encoder runtime.Encoder, gv runtime.GroupVersioner) runtime.Encoder {
	scheme := apiextensionsapiserver.Scheme
	return versioning.NewCodec(encoder, nil, sameVersion{}, scheme, scheme, scheme, gv, nil, "coldcrsNegotiatedSerializer")
}

func (s negotiatedSerializer) DecoderToVersion(decoder runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	scheme := apiextensionsapiserver.Scheme
	return versioning.NewCodec(nil, decoder, runtime.UnsafeObjectConvertor(scheme), scheme, scheme, scheme, nil, gv, "coldcrsNegotiatedSerializer")
}

// sameVersion converts what an empty kind's answers hold: its (empty)
// lists and bookmarks, already in the version asked for, and the meta
// types (metadata-only answers), which the scheme converts.
type sameVersion struct{}

func (sameVersion) Convert(in, out, context interface{}) error {
	return runtime.UnsafeObjectConvertor(apiextensionsapiserver.Scheme).Convert(in, out, context)
}

func (sameVersion) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	if _, ok := in.(runtime.Unstructured); !ok {
		return runtime.UnsafeObjectConvertor(apiextensionsapiserver.Scheme).ConvertToVersion(in, target)
	}
	from := in.GetObjectKind().GroupVersionKind()
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{from})
	if !ok || to.GroupKind() != from.GroupKind() {
		return nil, fmt.Errorf("%v cannot be converted to %v here", from, target)
	}
	in.GetObjectKind().SetGroupVersionKind(to)
	return in, nil
}

func (sameVersion) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", fmt.Errorf("field label %q: field selectors are served by the CRD's storage", label)
}

type unstructuredCreator struct{}

func (unstructuredCreator) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}

func kindOf(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Status.AcceptedNames.Kind}
}

func listKindOf(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Status.AcceptedNames.ListKind}
}
