package allinone_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/layering"
)

// TestEphemeralFailedStartRemovesNewMember: in an Ephemeral data dir a new
// etcd member starts while the API server's configuration is built; when
// the configuration then fails (API Priority and Fairness without its
// API), the start removes the member with the rest of what it made, and
// a data dir that held a file of the caller's holds just that again, not
// even the data dir's lock file.
func TestEphemeralFailedStartRemovesNewMember(t *testing.T) {
	t.Parallel()
	comp, err := layering.Generic().Compose()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := allinone.NewOptions()
	o.DataDir, o.Ephemeral, o.Controllers = dir, true, nil
	o.APIServer.SecureServing.BindPort = 0
	o.APIServer.APIEnablement.RuntimeConfig = map[string]string{"flowcontrol.apiserver.k8s.io/v1": "false"}
	o.Etcd.LogOutput = &strings.Builder{}
	cp, err := allinone.Start(context.Background(), *o, comp)
	if err == nil {
		cp.Wait()
		t.Fatal("started with API Priority and Fairness but not its API")
	}
	if !strings.Contains(err.Error(), "API Priority and Fairness needs") {
		t.Fatalf("got %v, want the error of API Priority and Fairness without its API", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"keep"}; !slices.Equal(names, want) {
		t.Errorf("the data dir holds %v after the failed start, want %v", names, want)
	}
}
