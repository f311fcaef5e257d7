package integration

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/layering"
)

// TestStopDuringPostStartHook: a control plane stopped while a layer's
// post-start hook still runs stops cleanly, even though the hook returns
// its context's error: k8s.io/apiserver ends the whole process when a
// hook fails, which took a test binary down with a test server stopped
// early.
func TestStopDuringPostStartHook(t *testing.T) {
	t.Parallel()
	running := make(chan struct{})
	comp, err := layering.Generic().With(layering.Layer{
		Name: "slow-hook",
		PostStartHooks: map[string]genericapiserver.PostStartHookFunc{"wait-for-stop": func(ctx genericapiserver.PostStartHookContext) error {
			close(running)
			<-ctx.Done()
			return ctx.Err()
		}},
	}).Compose()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp, err := allinone.Start(ctx, allInOne(t.TempDir(), nil), comp)
	if err != nil {
		t.Fatal(err)
	}
	<-running
	// k8s.io/apiextensions-apiserver's own hooks fail the same way when
	// stopped before they are done (docs/architecture.md); wait for them.
	client := adminClient(t, cp)
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("exclude", "poststarthook/wait-for-stop").Do(ctx).Error()
		return err == nil, nil
	}); err != nil {
		t.Fatalf("not ready but for the hook: %v", err)
	}
	cancel()
	if err := cp.Wait(); err != nil {
		t.Errorf("stopped with error: %v", err)
	}
}
