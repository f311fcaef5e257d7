package authn

import (
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/webhook"
)

// NewTokenWebhook returns an authenticator that asks the TokenReview
// service a kubeconfig file names about each token (version "v1" or
// "v1beta1" of authentication.k8s.io), and remembers each answer, yes or
// no, for cacheTTL, as kube-apiserver's
// --authentication-token-webhook-config-file does. A service that cannot
// be reached makes the token fail (401), never the request.
func NewTokenWebhook(kubeconfigFile, version string, cacheTTL time.Duration, apiAudiences authenticator.Audiences) (authenticator.Token, error) {
	cfg, err := webhookutil.LoadKubeconfig(kubeconfigFile, nil)
	if err != nil {
		return nil, fmt.Errorf("--authentication-token-webhook-config-file: %w", err)
	}
	w, err := webhook.New(cfg, version, apiAudiences, *webhook.DefaultRetryBackoff())
	if err != nil {
		return nil, fmt.Errorf("--authentication-token-webhook-version: %w", err)
	}
	return tokencache.New(w, false, cacheTTL, cacheTTL), nil
}
