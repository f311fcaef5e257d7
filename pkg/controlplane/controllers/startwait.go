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
// first answer or after a minute of client-side retries.
func (o *Options) ConfigContext(ctx context.Context) (*Config, error) {
	if o.SecureServing.BindPort != 0 && readsAuthConfigMap(o.Authentication) {
		kubeconfig := o.Authentication.RemoteKubeConfigFile
		if kubeconfig == "" {
			kubeconfig = o.Kubeconfig
		}
		if err := waitForAuthConfigMap(ctx, kubeconfig); err != nil {
			return nil, err
		}
	}
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

// waitForAuthConfigMap reads the ConfigMap delegated authentication reads
// until the API server answers it (found or not) or gives an answer that
// waiting cannot change, which delegated authentication then reports. It
// fails after startupWait with the last error.
func waitForAuthConfigMap(ctx context.Context, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		// Config reports it.
		return nil
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	logger := klog.FromContext(ctx)
	var logged time.Time
	var last error
	err = wait.PollUntilContextTimeout(ctx, startupRetryPeriod, startupWait, true, func(ctx context.Context) (bool, error) {
		attempt, cancel := context.WithTimeout(ctx, startupAttemptTimeout)
		defer cancel()
		_, err := client.CoreV1().ConfigMaps(authConfigMapNamespace).Get(attempt, authConfigMapName, metav1.GetOptions{})
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err == nil || !transient(err) {
			return true, nil
		}
		last = err
		if time.Since(logged) >= startupLogPeriod {
			logger.Info("Waiting for the API server to serve the ConfigMap that delegated authentication reads",
				"configMap", authConfigMapNamespace+"/"+authConfigMapName, "server", cfg.Host, "err", err)
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
