package controllers

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// NamespaceActive reports whether namespace name exists in lister and is
// Active, neither gone nor Terminating: controllers that put objects into
// every namespace skip the others.
func NamespaceActive(lister corelisters.NamespaceLister, name string) (bool, error) {
	ns, err := lister.Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return ns.Status.Phase == corev1.NamespaceActive, nil
}
