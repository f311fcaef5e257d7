package allinone_test

import (
	"context"
	"fmt"
	"os"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/layering"
)

// Example starts a control plane in a data dir of its own on a free port,
// waits until it is ready (its /readyz answers 200), and stops it. A
// ControlPlane is a handle as etcd.Handle and apiserver.Handle are: Ready,
// Done, Wait and Close.
func Example() {
	dir, err := os.MkdirTemp("", "gcp-allinone-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()
	comp, err := layering.Generic().Compose()
	if err != nil {
		fmt.Println(err)
		return
	}
	o := allinone.NewOptions()
	o.DataDir = dir
	o.APIServer.SecureServing.BindPort = 0 // a free port
	o.Controllers = nil

	cp, err := allinone.Start(context.Background(), *o, comp)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = cp.Close() }()

	select {
	case <-cp.Ready():
		fmt.Println("ready")
	case <-cp.Done():
		fmt.Println(cp.Wait())
	}
	// Output: ready
}
