package authn

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	authenticationconfigmetrics "k8s.io/apiserver/pkg/server/options/authenticationconfig/metrics"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/configfile"
)

// DecodeConfig decodes an AuthenticationConfiguration
// (apiserver.config.k8s.io v1, v1beta1 or v1alpha1, as kube-apiserver's
// --authentication-config takes), strictly: an unknown or duplicate field
// is an error. It does not validate.
func DecodeConfig(data []byte) (*apiserverapi.AuthenticationConfiguration, error) {
	scheme := runtime.NewScheme()
	apiserverinstall.Install(scheme)
	obj, gvk, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*apiserverapi.AuthenticationConfiguration)
	if !ok {
		return nil, fmt.Errorf("expected an AuthenticationConfiguration, got %s", gvk)
	}
	return cfg, nil
}

// WatchConfigFile reloads the jwt section of the AuthenticationConfiguration
// at path into j whenever the file changes, until ctx is done; initial is
// the content the server started with. A file that does not decode or
// validate, or that changes the anonymous section (which needs a restart,
// as upstream), keeps the authenticators in place; the log says why and
// apiserver_authentication_config_controller_automatic_reloads_total
// counts it, as upstream does.
func (j *JWT) WatchConfigFile(ctx context.Context, path string, initial []byte) {
	authenticationconfigmetrics.RegisterMetrics()
	authenticationconfigmetrics.RecordAuthenticationConfigLastConfigInfo(j.opts.APIServerID, string(initial))
	var anonymous *apiserverapi.AnonymousAuthConfig
	if cfg, err := DecodeConfig(initial); err == nil {
		anonymous = cfg.Anonymous
	}
	configfile.Watch(ctx, path, initial, configfile.DefaultInterval, func(data []byte) error {
		err := j.reload(data, anonymous)
		if err != nil {
			authenticationconfigmetrics.RecordAuthenticationConfigAutomaticReloadFailure(j.opts.APIServerID)
			return fmt.Errorf("--authentication-config %s: %w", path, err)
		}
		authenticationconfigmetrics.RecordAuthenticationConfigAutomaticReloadSuccess(j.opts.APIServerID, string(data))
		return nil
	}, func(error) {
		authenticationconfigmetrics.RecordAuthenticationConfigAutomaticReloadFailure(j.opts.APIServerID)
	})
}

func (j *JWT) reload(data []byte, anonymous *apiserverapi.AnonymousAuthConfig) error {
	cfg, err := DecodeConfig(data)
	if err != nil {
		return err
	}
	if !equality.Semantic.DeepEqual(cfg.Anonymous, anonymous) {
		return fmt.Errorf("anonymous: the anonymous section cannot change while the server runs; restart it to apply that")
	}
	return j.Replace(cfg.JWT)
}
