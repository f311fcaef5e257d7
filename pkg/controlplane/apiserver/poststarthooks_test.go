package apiserver

import (
	"context"
	"errors"
	"testing"

	genericapiserver "k8s.io/apiserver/pkg/server"
)

// A hook's error fails the start (k8s.io/apiserver ends the process)
// unless the server is stopping, when the hook was only cut short.
func TestStoppingIsNoFailure(t *testing.T) {
	t.Parallel()
	failed := errors.New("failed")
	hook := stoppingIsNoFailure("h", func(ctx genericapiserver.PostStartHookContext) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return failed
	})
	if err := hook(genericapiserver.PostStartHookContext{Context: context.Background()}); !errors.Is(err, failed) {
		t.Errorf("while serving: %v, want %v", err, failed)
	}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	if err := hook(genericapiserver.PostStartHookContext{Context: stopped}); err != nil {
		t.Errorf("while stopping: %v, want nil", err)
	}
}
