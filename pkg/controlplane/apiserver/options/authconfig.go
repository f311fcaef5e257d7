package options

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
)

// loadAuthenticationConfig reads an AuthenticationConfiguration file
// (apiserver.config.k8s.io, the format of kube-apiserver's
// --authentication-config) and validates it. gcp honours its anonymous
// section; JWT authenticators are rejected until they are supported.
func loadAuthenticationConfig(path string) (*apiserverapi.AuthenticationConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--authentication-config: %w", err)
	}
	scheme := runtime.NewScheme()
	apiserverinstall.Install(scheme)
	obj, gvk, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("--authentication-config %s: %w", path, err)
	}
	cfg, ok := obj.(*apiserverapi.AuthenticationConfiguration)
	if !ok {
		return nil, fmt.Errorf("--authentication-config %s: expected an AuthenticationConfiguration, got %s", path, gvk)
	}
	if errs := apiservervalidation.ValidateAuthenticationConfiguration(authenticationcel.NewDefaultCompiler(), cfg, nil); len(errs) > 0 {
		return nil, fmt.Errorf("--authentication-config %s: %w", path, errs.ToAggregate())
	}
	if len(cfg.JWT) > 0 {
		return nil, fmt.Errorf("--authentication-config %s: jwt authenticators are not supported by gcp yet; only the anonymous section is", path)
	}
	return cfg, nil
}
