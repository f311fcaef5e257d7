package workarounds

import (
	"context"
	"errors"
	"net/http"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// tooLargeMessage says what etcd's limit is: its --max-request-bytes
// default, which gcp etcd and gcp start keep.
const tooLargeMessage = "the object is larger than etcd stores in one request (1.5 MiB with etcd's default --max-request-bytes): make it smaller"

// objectSizeStorage turns etcd's "too large" into 413, and its NOSPACE
// into 507, on writes. etcd refuses such a request whole, so nothing is
// stored; k8s.io/apiserver's etcd3 store (pkg/storage/etcd3/store.go,
// Create and GuaranteedUpdate) passes etcd's error on and the handler
// answers 500 (kubernetes#112152, open; kubernetes#74600 closed without a
// fix). test/integration TestObjectTooLargeForEtcd and
// TestNoSpaceIs507Everywhere hold it.
type objectSizeStorage struct{ storage.Interface }

func (s objectSizeStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return sizeError(s.Interface.Create(ctx, key, obj, out, ttl))
}

func (s objectSizeStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return sizeError(s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject))
}

// sizeError is err, or 413 when etcd (or its client, past its message
// size) refused the request for its size, or 507 when etcd refuses every
// write because its database reached its quota or a member's disk is low
// (the NOSPACE alarm).
func sizeError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) || rpctypes.ErrorDesc(err) == rpctypes.ErrRequestTooLarge.Error() ||
		grpcstatus.Code(err) == codes.ResourceExhausted {
		return apierrors.NewRequestEntityTooLargeError(tooLargeMessage)
	}
	if errors.Is(err, rpctypes.ErrGRPCNoSpace) || rpctypes.ErrorDesc(err) == rpctypes.ErrNoSpace.Error() {
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInsufficientStorage, Reason: metav1.StatusReasonServiceUnavailable,
			Message: "etcdserver: mvcc: database space exceeded: etcd takes no writes until space is freed (in its database's quota, or on its data dir's disk) and its NOSPACE alarm disarmed (docs/operations.md)",
		}}
	}
	return err
}
