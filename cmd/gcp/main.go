// Command gcp is the generic control plane: Kubernetes' API machinery
// without container orchestration, as one multicall binary.
package main

import (
	"os"

	"github.com/gcp-project/gcp/commands/multicall"
	"github.com/gcp-project/gcp/pkg/layering"
)

func main() { os.Exit(multicall.Main(product())) }

// product is gcp itself: the generic stack, under gcp's name.
func product() multicall.Product {
	return multicall.Product{
		Name:  "gcp",
		Short: "gcp is a generic control plane: the Kubernetes API machinery without pods, nodes or services",
		Stack: layering.Generic(),
	}
}
