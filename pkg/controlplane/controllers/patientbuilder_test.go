package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/controller-manager/pkg/clientbuilder"
)

// failingBuilder fails its first fails calls with err, then builds.
type failingBuilder struct {
	clientbuilder.SimpleControllerClientBuilder
	err   error
	fails int
	calls int
}

func (b *failingBuilder) Config(name string) (*rest.Config, error) {
	b.calls++
	if b.calls <= b.fails {
		return nil, b.err
	}
	return b.SimpleControllerClientBuilder.Config(name)
}

// A controller's client is built again while the failure passes, at
// once when it does not, and not after the manager stops.
func TestPatientBuilder(t *testing.T) {
	t.Parallel()
	base := clientbuilder.SimpleControllerClientBuilder{ClientConfig: &rest.Config{Host: "https://127.0.0.1:1"}}
	unavailable := apierrors.NewServiceUnavailable("etcd unavailable: etcd has no leader")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "x", errors.New("no"))

	inner := &failingBuilder{SimpleControllerClientBuilder: base, err: unavailable, fails: 2}
	if _, err := (patientBuilder{ControllerClientBuilder: inner, ctx: context.Background()}).Config("c"); err != nil || inner.calls != 3 {
		t.Errorf("503 twice: %v after %d calls, want a config after 3", err, inner.calls)
	}
	inner = &failingBuilder{SimpleControllerClientBuilder: base, err: forbidden, fails: 2}
	if _, err := (patientBuilder{ControllerClientBuilder: inner, ctx: context.Background()}).Config("c"); !apierrors.IsForbidden(err) || inner.calls != 1 {
		t.Errorf("403: %v after %d calls, want it at once", err, inner.calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	inner = &failingBuilder{SimpleControllerClientBuilder: base, err: unavailable, fails: 1 << 30}
	if _, err := (patientBuilder{ControllerClientBuilder: inner, ctx: ctx}).Config("c"); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("503 until stopped: %v, want the last failure", err)
	}
}

// The *OrDie methods k8s.io/controller-manager's interface has do not end
// the process on a failure: the config they give fails every request with it.
func TestPatientBuilderOrDieDoesNotExit(t *testing.T) {
	t.Parallel()
	base := clientbuilder.SimpleControllerClientBuilder{ClientConfig: &rest.Config{Host: "https://127.0.0.1:1"}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "x", errors.New("no"))
	inner := &failingBuilder{SimpleControllerClientBuilder: base, err: forbidden, fails: 1}
	cfg := (patientBuilder{ControllerClientBuilder: inner, ctx: context.Background()}).ConfigOrDie("c")
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); !errors.Is(err, forbidden) {
		t.Errorf("request through the failed config: %v, want the build's error", err)
	}
}
