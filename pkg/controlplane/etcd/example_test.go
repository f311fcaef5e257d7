package etcd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// Example starts a private member whose only listener is a unix socket in
// its data dir, waits until it serves, and stops it.
func Example() {
	dir, err := os.MkdirTemp("", "gcp-etcd-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()

	h, err := etcd.Start(context.Background(), etcd.DefaultConfig(filepath.Join(dir, "etcd")))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = h.Close() }()

	select {
	case <-h.Ready():
		fmt.Println("serving on", len(h.ClientURLs()), "unix socket")
	case err := <-h.Err():
		fmt.Println(err)
	}
	// Output: serving on 1 unix socket
}
