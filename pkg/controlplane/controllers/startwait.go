package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

const (
	// authConfigMapNamespace and authConfigMapName name the ConfigMap
	// that delegated authentication reads its CAs from, as upstream's.
	authConfigMapNamespace = metav1.NamespaceSystem
	authConfigMapName      = "extension-apiserver-authentication"
	// startupAttemptTimeout bounds one request of the waits at startup.
	startupAttemptTimeout = 5 * time.Second
	// startupRetryPeriod is how often the waits at startup try again.
	startupRetryPeriod = time.Second
	// startupLogPeriod is how often a wait at startup says again what it
	// waits for.
	startupLogPeriod = 5 * time.Second
	// startupWait bounds each wait at startup; then the process exits 1
	// with what it waited for, and its supervisor starts it again.
	startupWait = 5 * time.Minute
)

// ConfigContext is Config for a process that may be stopped at any moment
// of its startup: it returns ctx's error as soon as ctx is done, whatever
// Config is blocked in. With secure serving on, delegated authentication
// reads the ConfigMap kube-system/extension-apiserver-authentication
// through the API server, once, without a context; while the API server
// cannot answer (it, or its etcd, is down), ConfigContext waits for it, up
// to 5 minutes, and says so every few seconds, instead of failing at the
// first answer or after a minute of client-side retries. An API server
// that goes away between that wait and delegated authentication's own
// read (TestChaos saw one SIGKILLed there) fails Config; ConfigContext
// then waits for it again and tries once more, for as long as the API
// server is what fails it, within the same 5 minutes.
func (o *Options) ConfigContext(ctx context.Context) (*Config, error) {
	var kubeconfig string
	if o.SecureServing.BindPort != 0 && readsAuthConfigMap(o.Authentication) {
		kubeconfig = o.Authentication.RemoteKubeConfigFile
		if kubeconfig == "" {
			kubeconfig = o.Kubeconfig
		}
	}
	deadline := time.Now().Add(startupWait)
	for {
		if kubeconfig != "" {
			if err := waitForAuthConfigMap(ctx, kubeconfig); err != nil {
				return nil, err
			}
		}
		c, err := o.configUntilDone(ctx)
		if err == nil || kubeconfig == "" || ctx.Err() != nil || time.Now().After(deadline) || !authConfigMapUnreachable(ctx, kubeconfig) {
			return c, err
		}
		klog.FromContext(ctx).Info("The API server stopped answering while delegated authentication read its ConfigMap; waiting for it again", "err", err)
	}
}

// configUntilDone is Config, or ctx's error as soon as ctx is done.
func (o *Options) configUntilDone(ctx context.Context) (*Config, error) {
	type result struct {
		c   *Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := o.Config()
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readsAuthConfigMap reports whether delegated authentication with a
// reads the ConfigMap: it does for the client CA or the request-header CA
// unless both are given as files.
func readsAuthConfigMap(a *genericoptions.DelegatingAuthenticationOptions) bool {
	if a == nil || a.SkipInClusterLookup {
		return false
	}
	return a.ClientCert == (genericoptions.ClientCertAuthenticationOptions{}) || a.RequestHeader.ClientCAFile == ""
}

// authConfigMapUnreachable says whether one read of the ConfigMap that
// delegated authentication reads fails in a way waiting can change.
func authConfigMapUnreachable(ctx context.Context, kubeconfig string) bool {
	client, _, err := authConfigMapClient(kubeconfig)
	if err != nil {
		return false
	}
	return transient(getAuthConfigMap(ctx, client))
}

// authConfigMapClient is a client for kubeconfig, and its server's URL.
func authConfigMapClient(kubeconfig string) (kubernetes.Interface, string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, "", err
	}
	client, err := kubernetes.NewForConfig(cfg)
	return client, cfg.Host, err
}

// getAuthConfigMap reads the ConfigMap once, within startupAttemptTimeout.
func getAuthConfigMap(ctx context.Context, client kubernetes.Interface) error {
	attempt, cancel := context.WithTimeout(ctx, startupAttemptTimeout)
	defer cancel()
	_, err := client.CoreV1().ConfigMaps(authConfigMapNamespace).Get(attempt, authConfigMapName, metav1.GetOptions{})
	return err
}

// waitForAuthConfigMap reads the ConfigMap delegated authentication reads
// until the API server answers it (found or not) or gives an answer that
// waiting cannot change, which delegated authentication then reports. It
// fails after startupWait with the last error.
func waitForAuthConfigMap(ctx context.Context, kubeconfig string) error {
	client, host, err := authConfigMapClient(kubeconfig)
	if err != nil {
		// Config reports it.
		return nil
	}
	logger := klog.FromContext(ctx)
	var logged time.Time
	var last error
	err = wait.PollUntilContextTimeout(ctx, startupRetryPeriod, startupWait, true, func(ctx context.Context) (bool, error) {
		err := getAuthConfigMap(ctx, client)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err == nil || !transient(err) {
			return true, nil
		}
		last = err
		if time.Since(logged) >= startupLogPeriod {
			logger.Info("Waiting for the API server to serve the ConfigMap that delegated authentication reads",
				"configMap", authConfigMapNamespace+"/"+authConfigMapName, "server", host, "err", err)
			logged = time.Now()
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server to serve ConfigMap %s/%s, which delegated authentication reads: %w (last: %v)",
			authConfigMapNamespace, authConfigMapName, err, last)
	}
	return nil
}

// transient reports whether err is an answer, or a failure to get one,
// that can change by waiting: the API server unreachable, overloaded, or
// unable to reach its storage.
func transient(err error) bool {
	var netErr net.Error
	switch {
	case apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	}
	return false
}
