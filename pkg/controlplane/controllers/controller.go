// Package controllers runs gcp's generic controllers the way
// kube-controller-manager runs its own: each controller is a Descriptor
// (name, aliases, on by default or not, service account, RBAC rules, own
// options, constructor), selected with
// --controllers, built with k8s.io/controller-manager's context (client
// builder, shared typed and metadata informers, a discovery REST mapper),
// started after leader election over a coordination.k8s.io Lease.
package controllers

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	cliflag "k8s.io/component-base/cli/flag"
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
	// DynamicInformerFactory gives shared informers of unstructured
	// objects, for resources without generated clients (a consumer's
	// native group, custom resources). The manager starts it with the
	// typed and metadata factories, after every constructor has run; a
	// controller's client of its own identity comes from
	// c.ClientBuilder.Config(name) and dynamic.NewForConfig, each of which
	// returns its error (never the builder's *OrDie methods, which
	// k8s.io/controller-manager's interface has to exit the process).
	DynamicInformerFactory dynamicinformer.DynamicSharedInformerFactory
	// ResourceInformers gives controllers that watch every resource one
	// informer per resource between them, stopped when no one holds it.
	ResourceInformers *ResourceInformers
	// Options are the controller's own options, made by its descriptor's
	// NewOptions and set from flags (or by a caller before Config); nil
	// when the descriptor has none or the Config was built without
	// Options. The manager gives each controller its own.
	Options ControllerOptions
}

// ControllerOptions are one controller's own options: flags of `gcp
// controllers` that only it reads (the CSR signer's CA, the root CA
// publisher's bundle), added, validated and completed with the manager's.
type ControllerOptions interface {
	// AddFlags adds the options' flags, in a section of their own.
	AddFlags(fss *cliflag.NamedFlagSets)
	// Validate returns every problem with the values; it reads no file.
	Validate() []error
}

// OptionsCompleter is ControllerOptions with a step that reads what the
// flags name (a file, say); Options.Config calls Complete after Validate,
// so a bad file stops the start with the flag's name.
type OptionsCompleter interface {
	ControllerOptions
	Complete() error
}

// ClusterSigningCAUser is ControllerOptions of a controller that signs
// certificates: Options.Config gives it Options.ClusterSigningCA, when
// that is set, before validating the options.
type ClusterSigningCAUser interface {
	ControllerOptions
	// UseClusterSigningCA makes the controller sign with ca.
	UseClusterSigningCA(ca CAFiles)
}

// Descriptor describes one controller: everything the controller manager,
// the composition and the bootstrap RBAC policy need to know of it, so that
// adding a controller is its own package plus one line in a layer.
type Descriptor struct {
	// Name is the canonical name used by --controllers.
	Name string
	// Aliases are other names --controllers accepts for it.
	Aliases []string
	// DisabledByDefault leaves the controller off unless named.
	DisabledByDefault bool
	// ServiceAccount is the ServiceAccount in kube-system the controller
	// runs as when service account credentials are on (the default): New
	// gets its client from c.ClientBuilder.Client(ServiceAccount). Several
	// controllers may share one, as kube-controller-manager's CSR
	// controllers share certificate-controller.
	ServiceAccount string
	// Rules are what ServiceAccount may do: the rules of ClusterRole
	// system:controller:<ServiceAccount>, bound to the account and
	// reconciled with the bootstrap policy while the controller's layer is
	// in the stack. Controllers sharing an account get the union.
	Rules []rbacv1.PolicyRule
	// Requires are the resources the controller cannot work without. The
	// manager asks discovery once, before building the controllers, and
	// leaves a controller out, saying so in one log line, when the API
	// server does not serve one of them (its group turned off with
	// --runtime-config, say), rather than have its informers fail to
	// watch for ever.
	Requires []schema.GroupVersionResource
	// NewOptions, if set, makes the controller's own options with their
	// defaults; the manager's Options add their flags, and the controller
	// finds them in Context.Options.
	NewOptions func() ControllerOptions
	// New builds the controller; it must not start informers or work
	// before Run.
	New func(ctx context.Context, c Context) (Controller, error)
}
