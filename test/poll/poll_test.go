package poll

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestWait: Wait returns once check holds, looking again every interval,
// and otherwise ends after timeout with check's last error.
func TestWait(t *testing.T) {
	n := 0
	if err := Wait(context.Background(), time.Millisecond, time.Minute, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("Wait = %v after %d looks, want nil after 3", err, n)
	}

	errLast := errors.New("the last reason")
	start := time.Now()
	err := Wait(context.Background(), time.Millisecond, 50*time.Millisecond, func() error { return errLast })
	if !errors.Is(err, errLast) || !strings.Contains(err.Error(), "50ms") {
		t.Fatalf("Wait on a check that never holds = %v, want the timeout and %v", err, errLast)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("Wait gave up after %v, before its timeout", took)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Wait(ctx, time.Millisecond, time.Minute, func() error { return errLast }); !errors.Is(err, errLast) {
		t.Fatalf("Wait with its context done = %v, want %v at once", err, errLast)
	}
}

// TestUntil: Until returns once check holds and fails the test otherwise.
func TestUntil(t *testing.T) {
	n := 0
	Until(t, time.Millisecond, time.Minute, func() error {
		if n++; n < 2 {
			return errors.New("not yet")
		}
		return nil
	})
	UntilTrue(t, time.Millisecond, time.Minute, "true", func() bool { return true })

	ft := &fakeT{}
	UntilTrue(ft, time.Millisecond, 10*time.Millisecond, "the sky is green", func() bool { return false })
	if !ft.failed || !strings.Contains(ft.msg, "the sky is green") {
		t.Fatalf("UntilTrue on a false condition: failed %v with %q, want a failure naming it", ft.failed, ft.msg)
	}
}

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatal(args ...any) {
	f.failed = true
	f.msg = fmt.Sprint(args...)
}
