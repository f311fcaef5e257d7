// Package secret serves core/v1 secrets.
package secret

import (
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
)

// SetDefaults sets the type Opaque when none is given, as upstream.
func SetDefaults(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

// Validate validates a new secret as upstream: name, key syntax, 1 MiB, and
// the keys each built-in type requires.
func Validate(s *corev1.Secret) field.ErrorList {
	dataPath := field.NewPath("data")
	errs := metavalidation.ValidateObjectMeta(&s.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, metavalidation.DataKeys(s.Data, dataPath)...)
	total := 0
	for _, value := range s.Data {
		total += len(value)
	}
	if total > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	validJSON := func(key string) {
		raw, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
			return
		}
		if err := json.Unmarshal(raw, &map[string]interface{}{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		validJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		validJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""), field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if _, ok := s.Data[key]; !ok {
				errs = append(errs, field.Required(dataPath.Key(key), ""))
			}
		}
	}
	return errs
}

// ValidateUpdate validates an update: the type never changes, and an
// immutable secret keeps its data.
func ValidateUpdate(s, old *corev1.Secret) field.ErrorList {
	errs := metavalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Type, old.Type, field.NewPath("type"))...)
	if old.Immutable != nil && *old.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(s.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
	}
	return append(errs, Validate(s)...)
}
