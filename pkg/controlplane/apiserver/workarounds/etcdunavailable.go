package workarounds

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
)

// etcdRetryAfterSeconds is the Retry-After of a 503 for an etcd without a
// leader: an election takes about a second, a lost quorum longer.
const etcdRetryAfterSeconds = 1

// noLeaderRetryInterval is how often a write refused for want of a leader
// is sent again while its time lasts: an election takes about a second.
const noLeaderRetryInterval = 100 * time.Millisecond

// WithEtcdUnavailable wraps g so that no request waits on etcd longer than
// timeout, and an etcd that cannot answer gets a 503 (with Retry-After) or
// 504 naming etcd, instead of a request that hangs until the request
// timeout and then a reset stream (issue 28).
//
// k8s.io/apiserver gives etcd the request's own context. Without quorum
// the member's answer never comes for a write (its proposal is dropped
// and etcd gives up only after its own request timeout, 5 s plus two
// election timeouts), and the etcd client retries a read that finds no
// leader a hundred times, or waits for a connection to any member that is
// down for as long as the context lasts; the request's 60 s then runs out
// while the handler still waits, and the server resets the stream.
//
// Every call into storage here says "require a leader", as upstream's etcd
// watches already do: a member that knows it has no leader refuses at
// once instead of proposing into the void. A write refused so is sent
// again until its time is up (it was never proposed, so it cannot have
// happened), so a write during an election waits for the new leader
// instead of failing. A call whose etcd has been silent for timeout is
// cancelled; time spent in the storage's callbacks (admission inside an
// update or a delete, which has its own deadlines) does not count.
func WithEtcdUnavailable(g generic.RESTOptionsGetter, timeout time.Duration) generic.RESTOptionsGetter {
	if timeout <= 0 {
		return g
	}
	return WrapStorage(g, func(s storage.Interface, _ factory.DestroyFunc) storage.Interface {
		return etcdUnavailableStorage{Interface: s, timeout: timeout}
	})
}

// etcdUnavailableStorage bounds and explains storage's waits on etcd.
type etcdUnavailableStorage struct {
	storage.Interface
	timeout time.Duration
}

func (s etcdUnavailableStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return s.write(ctx, func(b *etcdBudget) error { return s.Interface.Create(b.ctx, key, obj, out, ttl) })
}

func (s etcdUnavailableStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	return s.write(ctx, func(b *etcdBudget) error {
		validate := validateDeletion
		if validate != nil {
			validate = func(ctx context.Context, obj runtime.Object) error {
				b.pause()
				defer b.resume()
				return validateDeletion(ctx, obj)
			}
		}
		return s.Interface.Delete(b.ctx, key, out, preconditions, validate, cachedExistingObject, opts)
	})
}

func (s etcdUnavailableStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return s.write(ctx, func(b *etcdBudget) error {
		update := func(input runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
			b.pause()
			defer b.resume()
			return tryUpdate(input, res)
		}
		return s.Interface.GuaranteedUpdate(b.ctx, key, destination, ignoreNotFound, preconditions, update, cachedExistingObject)
	})
}

// Get bounds a consistent read (no resourceVersion), which asks etcd. A
// read at a resourceVersion is the watch cache's: it waits up to 3 s for the
// cache to reach a version ahead of it and then answers 504
// ResourceVersionTooLarge, client-go's signal to retry, which the timeout
// must not cut short into "etcd unavailable".
func (s etcdUnavailableStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	if opts.ResourceVersion != "" {
		return s.Interface.Get(ctx, key, opts, objPtr)
	}
	return s.read(ctx, func(ctx context.Context) error { return s.Interface.Get(ctx, key, opts, objPtr) })
}

// GetList bounds a consistent list, as Get a consistent get.
func (s etcdUnavailableStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if opts.ResourceVersion != "" {
		return s.Interface.GetList(ctx, key, opts, listObj)
	}
	return s.read(ctx, func(ctx context.Context) error { return s.Interface.GetList(ctx, key, opts, listObj) })
}

func (s etcdUnavailableStorage) Stats(ctx context.Context) (storage.Stats, error) {
	var stats storage.Stats
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		stats, err = s.Interface.Stats(ctx)
		return err
	})
	return stats, err
}

func (s etcdUnavailableStorage) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	var rv uint64
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		rv, err = s.Interface.GetCurrentResourceVersion(ctx)
		return err
	})
	return rv, err
}

// Watch requires a leader; its context lasts as long as the watch, so it
// cannot be bounded. A watch that must first read etcd's current revision
// (one that sends its initial events from "now") would wait on etcd with
// it and then begin with a 500 error event, so that read is made first
// here, bounded: when it fails the watch is refused with its answer.
func (s etcdUnavailableStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if opts.ResourceVersion == "" && opts.SendInitialEvents != nil {
		if _, err := s.GetCurrentResourceVersion(ctx); err != nil {
			return nil, err
		}
	}
	w, err := s.Interface.Watch(clientv3.WithRequireLeader(ctx), key, opts)
	return w, etcdError(ctx, err, false, false, s.timeout)
}

// read runs call with a leader required, for at most the timeout while etcd
// does not answer. A read can be slow for reasons of its own (a custom
// resource's conversion webhook retrying inside the storage's decoding, a
// large list), so when the time runs out etcd is asked for its current
// revision, which needs a leader and a quorum: if it answers, the read is
// given the timeout again, and only if it does not is the read cancelled.
// (Writes get no such second chance: one forwarded to a leader that just
// died is lost, and waiting for etcd to notice is what the bound is for.)
func (s etcdUnavailableStorage) read(ctx context.Context, call func(context.Context) error) error {
	b := newEtcdBudget(ctx, s.timeout, func() bool {
		probe, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.WithoutCancel(ctx)), s.timeout)
		defer cancel()
		_, err := s.Interface.GetCurrentResourceVersion(probe)
		return err == nil
	})
	defer b.stop()
	err := call(b.ctx)
	return etcdError(ctx, err, b.expired(), false, s.timeout)
}

// write runs call with a leader required, again while the member says it
// has none, until etcd has been silent for the timeout.
func (s etcdUnavailableStorage) write(ctx context.Context, call func(*etcdBudget) error) error {
	b := newEtcdBudget(ctx, s.timeout, nil)
	defer b.stop()
	for {
		err := call(b)
		if !isNoLeader(err) {
			return etcdError(ctx, err, b.expired(), true, s.timeout)
		}
		// Refused for want of a leader, so never proposed: 503 (retry
		// at will) rather than 504 (may have happened) when time is up.
		// No try is begun that the time could cut short: one cut in
		// flight may have been proposed, and would have to be a 504.
		if time.Until(b.deadline) < 2*noLeaderRetryInterval {
			return etcdError(ctx, err, false, true, s.timeout)
		}
		select {
		case <-b.ctx.Done():
			return etcdError(ctx, err, false, true, s.timeout)
		case <-time.After(noLeaderRetryInterval):
		}
	}
}

// etcdBudget is a context for storage calls that is cancelled once etcd
// has had the timeout to answer, not counting paused time.
type etcdBudget struct {
	ctx     context.Context
	cancel  context.CancelFunc
	timeout time.Duration
	timer   *time.Timer
	fired   atomic.Bool
	// deadline is when the timer fires, for writes (the probe of reads
	// may move it without saying so here).
	deadline time.Time
	// probe, when set, is asked when the time runs out whether etcd
	// answers; if it does the clock starts again instead.
	probe func() bool
}

// newEtcdBudget starts the clock; probe may be nil.
func newEtcdBudget(parent context.Context, timeout time.Duration, probe func() bool) *etcdBudget {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(parent))
	b := &etcdBudget{ctx: ctx, cancel: cancel, timeout: timeout, probe: probe}
	// Made stopped and then started, so the callback, which may start it
	// again, runs only after b.timer is set.
	b.timer = time.AfterFunc(time.Hour, func() {
		if b.probe != nil && ctx.Err() == nil && b.probe() && ctx.Err() == nil {
			b.timer.Reset(timeout)
			return
		}
		b.fired.Store(true)
		cancel()
	})
	b.timer.Stop()
	b.deadline = time.Now().Add(timeout)
	b.timer.Reset(timeout)
	return b
}

// pause stops the clock while the storage runs a caller's callback.
func (b *etcdBudget) pause() { b.timer.Stop() }

// resume restarts the clock, with the whole timeout, unless it ran out.
func (b *etcdBudget) resume() {
	if !b.fired.Load() {
		b.deadline = time.Now().Add(b.timeout)
		b.timer.Reset(b.timeout)
	}
}

func (b *etcdBudget) expired() bool { return b.fired.Load() }

func (b *etcdBudget) stop() {
	b.timer.Stop()
	b.cancel()
}

// isNoLeader says whether etcd refused a request because the member has no
// leader (only requests that require one are refused so).
func isNoLeader(err error) bool {
	return err != nil && (errors.Is(err, rpctypes.ErrGRPCNoLeader) || errors.Is(err, rpctypes.ErrNoLeader) ||
		rpctypes.ErrorDesc(err) == rpctypes.ErrNoLeader.Error())
}

// etcdError is err, or 503 or 504 naming etcd when err means that etcd
// could not answer:
//   - 504 when it stayed silent for the timeout (expired);
//   - 503 with Retry-After when it said it cannot answer now (no leader, a
//     leader lost, its own timeout) or no member could be reached;
//   - but for a write, 503 with Retry-After only when the member refused it
//     for want of a leader, so that it was never proposed. Any other failure
//     of a write (etcd's own timeout, a member that died or a connection that
//     broke before the answer came) may come after the write was committed,
//     so it is a 504 without Retry-After: client-go resends a request on its
//     own after a 5xx with Retry-After, and a delete resent after it
//     happened answers 404, a create 409 (the chaos test found this).
//
// An error of the request's own context is left alone (the client went
// away, or the request's own timeout answers for it), and so is an API
// error below 500.
func etcdError(ctx context.Context, err error, expired, write bool, timeout time.Duration) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code < http.StatusInternalServerError {
		return err
	}
	var etcdErr rpctypes.EtcdError
	why := ""
	switch {
	case expired:
		return etcdTimeout(fmt.Sprintf("no answer from etcd within %v (has the etcd cluster lost its quorum?)", timeout))
	case isNoLeader(err):
		return etcdUnavailable("etcd has no leader (an election, or the etcd cluster has lost its quorum)")
	case errors.As(err, &etcdErr) && etcdErr.Code() == codes.Unavailable:
		why = etcdErr.Error()
	case grpcstatus.Code(err) == codes.Unavailable:
		why = rpctypes.ErrorDesc(err)
	default:
		return err
	}
	if write {
		return etcdTimeout(why + "; the write may or may not have been made: read before you retry it")
	}
	return etcdUnavailable(why)
}

// etcdTimeout is a 504, without Retry-After, that says why etcd did not
// answer.
func etcdTimeout(why string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusGatewayTimeout, Reason: metav1.StatusReasonTimeout,
		Message: "etcd unavailable: " + why,
	}}
}

// etcdUnavailable is a 503 with Retry-After that says why etcd cannot
// answer.
func etcdUnavailable(why string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
		Message: "etcd unavailable: " + why,
		Details: &metav1.StatusDetails{RetryAfterSeconds: etcdRetryAfterSeconds},
	}}
}
