// Package controllers runs gcp's generic controllers the way
// kube-controller-manager runs its own: each controller is a Descriptor
// (name, aliases, on by default or not, constructor), selected with
// --controllers, built with k8s.io/controller-manager's context (client
// builder, shared typed and metadata informers, a discovery REST mapper),
// started after leader election over a coordination.k8s.io Lease.
package controllers

import (
	"context"

	"k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
)

// Controller is a constructed controller: Name and Run. A controller may
// also implement controller.HealthCheckable to add a /healthz check.
type Controller interface {
	controller.Interface
	// Run works until ctx is done, then returns.
	Run(ctx context.Context)
}

// Context is what a controller's constructor gets: k8s.io/controller-manager's
// controller context plus what gcp's controllers need besides.
type Context struct {
	app.ControllerContext
	// RootCA is the CA bundle of the API server, published in every
	// namespace as ConfigMap kube-root-ca.crt.
	RootCA []byte
}

// Descriptor describes one controller.
type Descriptor struct {
	// Name is the canonical name used by --controllers.
	Name string
	// Aliases are other names --controllers accepts for it.
	Aliases []string
	// DisabledByDefault leaves the controller off unless named.
	DisabledByDefault bool
	// New builds the controller; it must not start informers or work
	// before Run. A client for the controller's own identity comes from
	// c.ClientBuilder.Client(<its service account name>).
	New func(ctx context.Context, c Context) (Controller, error)
}
