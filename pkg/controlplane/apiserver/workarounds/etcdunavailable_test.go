package workarounds

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What the etcd client returns when etcd cannot answer becomes 503 with
// Retry-After or 504 naming etcd (for a write, Retry-After only when it was
// never proposed); anything else, and any error once the request's own
// context is done, is left as it was.
func TestEtcdError(t *testing.T) {
	t.Parallel()
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")
	plain := errors.New("decoding failed")
	for _, tc := range []struct {
		name       string
		ctx        context.Context
		err        error
		expired    bool
		write      bool
		code       int32 // 0: err comes back unchanged
		retryAfter bool
	}{
		{name: "no leader, as the client returns it", ctx: live, err: rpctypes.ErrNoLeader, code: http.StatusServiceUnavailable, retryAfter: true},
		{name: "no leader, as gRPC carries it", ctx: live, err: rpctypes.ErrGRPCNoLeader, code: http.StatusServiceUnavailable, retryAfter: true},
		{name: "etcd's own request timeout", ctx: live, err: rpctypes.ErrTimeout, code: http.StatusServiceUnavailable, retryAfter: true},
		{name: "leader changed", ctx: live, err: rpctypes.ErrLeaderChanged, code: http.StatusServiceUnavailable, retryAfter: true},
		{name: "no member reachable", ctx: live, err: grpcstatus.Error(codes.Unavailable, "connection refused"), code: http.StatusServiceUnavailable, retryAfter: true},
		{name: "wrapped", ctx: live, err: fmt.Errorf("listing: %w", rpctypes.ErrNoLeader), code: http.StatusServiceUnavailable, retryAfter: true},
		{name: "a write refused for want of a leader (never proposed)", ctx: live, err: rpctypes.ErrGRPCNoLeader, write: true, code: http.StatusServiceUnavailable, retryAfter: true},
		{name: "a write that timed out in etcd (may have been committed)", ctx: live, err: rpctypes.ErrTimeout, write: true, code: http.StatusGatewayTimeout},
		{name: "a write whose member died before answering", ctx: live, err: grpcstatus.Error(codes.Unavailable, "error reading from server: EOF"), write: true, code: http.StatusGatewayTimeout},
		{name: "a write after its leader failed", ctx: live, err: rpctypes.ErrTimeoutDueToLeaderFail, write: true, code: http.StatusGatewayTimeout},
		{name: "silent past the timeout", ctx: live, err: context.Canceled, expired: true, code: http.StatusGatewayTimeout},
		{name: "a 5xx of the watch cache past the timeout", ctx: live, err: apierrors.NewTimeoutError("Too large resource version", 1), expired: true, code: http.StatusGatewayTimeout},
		{name: "not found", ctx: live, err: notFound},
		{name: "not found as the timer fired", ctx: live, err: notFound, expired: true},
		{name: "another error", ctx: live, err: plain},
		{name: "the request's own context", ctx: done, err: rpctypes.ErrNoLeader},
		{name: "the request's own context, past the timeout", ctx: done, err: context.Canceled, expired: true},
	} {
		got := etcdError(tc.ctx, tc.err, tc.expired, tc.write, 2*time.Second)
		if tc.code == 0 {
			if got != tc.err {
				t.Errorf("%s: %v became %v", tc.name, tc.err, got)
			}
			continue
		}
		var status apierrors.APIStatus
		if !errors.As(got, &status) {
			t.Errorf("%s: %v is not an API status", tc.name, got)
			continue
		}
		s := status.Status()
		if s.Code != tc.code || !strings.HasPrefix(s.Message, "etcd unavailable: ") {
			t.Errorf("%s: %d %q, want %d naming etcd", tc.name, s.Code, s.Message, tc.code)
		}
		if hasRetryAfter := s.Details != nil && s.Details.RetryAfterSeconds > 0; hasRetryAfter != tc.retryAfter {
			t.Errorf("%s: Retry-After %v, want %v", tc.name, hasRetryAfter, tc.retryAfter)
		}
	}
}

// The budget runs out only while etcd is being waited on: time in a
// callback (admission inside an update) does not count, and the clock
// starts again in full after it.
func TestEtcdBudgetPausesForCallbacks(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	b := newEtcdBudget(context.Background(), timeout, nil)
	defer b.stop()
	b.pause()
	// A budget of twice the time, started after b paused, has run out:
	// b, had it not paused, would have run out a whole timeout earlier.
	control := newEtcdBudget(context.Background(), 2*timeout, nil)
	defer control.stop()
	select {
	case <-control.ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("a budget that was not paused never ran out")
	}
	if b.expired() || b.ctx.Err() != nil {
		t.Fatal("the budget ran out while paused")
	}
	b.resume()
	select {
	case <-b.ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the budget never ran out after resuming")
	}
	if !b.expired() {
		t.Fatal("the context is done but the budget does not say it ran out")
	}
}

// A read whose time runs out while etcd still answers the probe is given
// the time again (it is slow for reasons of its own, such as a conversion
// webhook); once etcd stops answering it is cancelled.
func TestEtcdBudgetProbesBeforeGivingUp(t *testing.T) {
	t.Parallel()
	const timeout = 20 * time.Millisecond
	var answers atomic.Int32
	answers.Store(3)
	probed := make(chan struct{}, 10)
	b := newEtcdBudget(context.Background(), timeout, func() bool {
		probed <- struct{}{}
		return answers.Add(-1) >= 0
	})
	defer b.stop()
	select {
	case <-b.ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the budget never ran out once etcd stopped answering")
	}
	if !b.expired() {
		t.Fatal("the context is done but the budget does not say it ran out")
	}
	if n := len(probed); n != 4 {
		t.Fatalf("etcd was probed %d times, want 4 (three answers, then none)", n)
	}
}
