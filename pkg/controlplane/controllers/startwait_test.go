package controllers

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gcp-project/gcp/test/freeport"
)

// TestTransient: the startup waits wait out an API server or etcd that
// does not answer, and give up at once on answers waiting cannot change.
func TestTransient(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewServiceUnavailable("etcd unavailable"), true},
		{apierrors.NewTimeoutError("etcd unavailable: no answer from etcd within 2s", 1), true},
		{apierrors.NewTooManyRequests("busy", 1), true},
		{apierrors.NewInternalError(errors.New("boom")), true},
		{fmt.Errorf("get: %w", syscall.ECONNREFUSED), true},
		{context.DeadlineExceeded, true},
		{apierrors.NewForbidden(cm, "extension-apiserver-authentication", errors.New("RBAC")), false},
		{apierrors.NewUnauthorized("who are you"), false},
		{errors.New("x509: certificate signed by unknown authority"), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestConfigContextWaitsAgain: an API server that stops answering between
// ConfigContext's wait for the ConfigMap and delegated authentication's own
// read of it (TestChaos SIGKILLed one there, and `gcp controllers` exited)
// is waited for again, and the configuration is built once it answers
// (with the listener the failed attempt opened: SecureServingOptions keeps
// it for the next ApplyTo).
func TestConfigContextWaitsAgain(t *testing.T) {
	var reads atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication" {
			http.NotFound(w, r)
			return
		}
		// The wait's read is answered; the next two (delegated
		// authentication's, then ConfigContext's look) find the API
		// server unable to answer; the rest are answered.
		if n := reads.Add(1); n == 2 || n == 3 {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"extension-apiserver-authentication","namespace":"kube-system"}}`)
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: srv.URL, CertificateAuthorityData: caPEM}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {Token: "t"}},
		Contexts:       map[string]*clientcmdapi.Context{"c": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "c",
	}, kubeconfig); err != nil {
		t.Fatal(err)
	}
	o := NewOptions(nil)
	o.Kubeconfig = kubeconfig
	o.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	o.SecureServing.BindPort = freeport.Get(t)
	o.SecureServing.ServerCert.CertDirectory = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := o.ConfigContext(ctx)
	if err != nil {
		t.Fatalf("after the API server came back: %v", err)
	}
	_ = c.SecureServing.Listener.Close()
	if n := reads.Load(); n < 4 {
		t.Errorf("the ConfigMap was read %d times, want the wait, the failed read, the look and the reads after", n)
	}
}
