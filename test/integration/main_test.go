// Package integration tests the library's server in-process: real embedded
// etcd, real HTTPS, client-go.
package integration

import (
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	servertesting "github.com/gcp-project/gcp/pkg/controlplane/apiserver/testing"
	"github.com/gcp-project/gcp/pkg/layering"
)

func genericExtra(t testing.TB, stack layering.Stack) apiserver.Extra {
	t.Helper()
	extra, err := stack.Extra()
	if err != nil {
		t.Fatal(err)
	}
	return extra
}

func startGeneric(t testing.TB) *servertesting.TestServer {
	t.Helper()
	return servertesting.StartTestServer(t, servertesting.Options{Extra: genericExtra(t, layering.Generic())})
}
