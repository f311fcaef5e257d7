// Command widgets is a control plane built with gcp: Kubernetes' API
// machinery with namespaces, RBAC and CRDs, without leases or API Priority
// and Fairness, plus a native API group of its own, widgets.example.dev,
// and its controller.
package main

import (
	"os"

	"github.com/gcp-project/gcp/commands/multicall"
	"github.com/gcp-project/gcp/pkg/layering"

	"example.dev/widgets/layer"
)

func main() {
	os.Exit(multicall.Main(multicall.Product{
		Name:  "widgets", // the commands' help and messages say "widgets"
		Short: "A control plane for widgets",
		Stack: layering.Generic().
			Without(layering.Coordination, layering.FlowControl).
			With(layer.Layer()),
	}))
}
