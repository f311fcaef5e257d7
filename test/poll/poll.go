// Package poll waits, in tests, for a condition to hold, instead of a loop
// of the test's own that looks again and again until something is so or a
// time is up. It is k8s.io/apimachinery's wait.PollUntilContextTimeout with
// what a test needs on top: the last reason the condition did not hold, in
// the failure.
package poll

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Until calls check at once, then every interval, until it returns nil.
// If timeout passes first, it fails t with check's last error.
func Until(t testing.TB, interval, timeout time.Duration, check func() error) {
	t.Helper()
	if err := Wait(context.Background(), interval, timeout, check); err != nil {
		t.Fatal(err)
	}
}

// UntilTrue is Until for a condition without a reason: it fails t saying
// that what never became true.
func UntilTrue(t testing.TB, interval, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Until(t, interval, timeout, func() error {
		if !cond() {
			return errors.New(what + ": not yet")
		}
		return nil
	})
}

// Wait is Until for code that cannot fail a test (a goroutine, a helper
// that returns an error): it returns nil once check does, or, if timeout
// passes or ctx ends first, an error that says how long it waited and wraps
// check's last error.
func Wait(ctx context.Context, interval, timeout time.Duration, check func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case last == nil: // check never ran
		return fmt.Errorf("gave up after %v: %w", timeout, err)
	default:
		return fmt.Errorf("gave up after %v: %w", timeout, last)
	}
}
