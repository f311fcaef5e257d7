package controllers

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
