package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
)

// authenticationInfoHookName publishes how this server authenticates.
const authenticationInfoHookName = "publish-extension-apiserver-authentication"

// authenticationInfoConfigMap is read by aggregated API servers (through
// k8s.io/apiserver's delegating authentication) to learn the client CA and
// which front proxy may assert users in headers, as kube-apiserver publishes.
const authenticationInfoConfigMap = "extension-apiserver-authentication"

// authenticationInfo returns the ConfigMap data describing authn.
func authenticationInfo(authn *options.AuthenticationOptions) (map[string]string, error) {
	clientCA, err := os.ReadFile(authn.ClientCAFile)
	if err != nil {
		return nil, err
	}
	data := map[string]string{"client-ca-file": string(clientCA)}
	rh := authn.RequestHeader
	if rh.ClientCAFile == "" {
		return data, nil
	}
	rhCA, err := os.ReadFile(rh.ClientCAFile)
	if err != nil {
		return nil, err
	}
	data["requestheader-client-ca-file"] = string(rhCA)
	for key, values := range map[string][]string{
		"requestheader-username-headers":     rh.UsernameHeaders,
		"requestheader-uid-headers":          rh.UIDHeaders,
		"requestheader-group-headers":        rh.GroupHeaders,
		"requestheader-extra-headers-prefix": rh.ExtraHeaderPrefixes,
		"requestheader-allowed-names":        rh.AllowedNames,
	} {
		if values == nil {
			values = []string{}
		}
		b, err := json.Marshal(values)
		if err != nil {
			return nil, err
		}
		data[key] = string(b)
	}
	return data, nil
}

// publishAuthenticationInfo writes kube-system/extension-apiserver-authentication,
// retrying until kube-system exists and the write succeeds.
func publishAuthenticationInfo(authn *options.AuthenticationOptions) genericapiserver.PostStartHookFunc {
	return func(ctx genericapiserver.PostStartHookContext) error {
		data, err := authenticationInfo(authn)
		if err != nil {
			return fmt.Errorf("%s: %w", authenticationInfoHookName, err)
		}
		client, err := kubernetes.NewForConfig(ctx.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("%s: %w", authenticationInfoHookName, err)
		}
		cms := client.CoreV1().ConfigMaps(metav1.NamespaceSystem)
		return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			cm, err := cms.Get(ctx, authenticationInfoConfigMap, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: authenticationInfoConfigMap}, Data: data}, metav1.CreateOptions{})
				return err == nil, nil
			}
			if err != nil {
				return false, nil
			}
			cm.Data = data
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			return err == nil, nil
		})
	}
}
