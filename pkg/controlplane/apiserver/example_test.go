package apiserver_test

import (
	"context"
	"fmt"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
)

// ExampleStart starts an API server against running etcd members and
// waits until it is ready, as `gcp apiserver` does. It needs what `gcp
// apiserver` needs (--etcd-servers, serving and service account keys:
// `gcp pki init` makes them), so it is compiled, not run; the all-in-one
// control plane's Example (pkg/controlplane/allinone) runs.
func ExampleStart() {
	comp := composition.Composition{} // a stack's: layering.Generic().Compose()
	o := apiserver.NewOptions(comp)
	o.Etcd.StorageConfig.Transport.ServerList = []string{"https://127.0.0.1:2379"}
	// ... certificates and keys, as the flags of `gcp apiserver` set them.

	h, err := apiserver.Start(context.Background(), o, comp)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = h.Close() }()
	select {
	case <-h.Ready():
		fmt.Println("ready: /readyz answers 200")
	case <-h.Done():
		fmt.Println("stopped:", h.Err())
	}
}
