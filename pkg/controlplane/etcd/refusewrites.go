package etcd

import (
	"context"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy/adapter"
	"go.etcd.io/etcd/server/v3/storage"
	"google.golang.org/grpc"
)

// Writes are refused before raft while a NOSPACE alarm is raised.
//
// etcd refuses a put under the NOSPACE alarm only when it applies it
// (etcdserver/apply/capped.go), after raft has appended it to every
// member's WAL; its own check before raft (v3rpc/quota.go) looks at the
// database quota alone. So under an alarm raised for low disk, every write
// a client retries still grows the WAL on the disk that is running out,
// 20 KB for a 20 KB ConfigMap, until etcd cuts a new 64 MB segment.
// Refusing those writes before they are proposed answers the client the
// same ("database space exceeded") and writes nothing. The rule is etcd's
// capped applier's, for any NOSPACE alarm in the cluster (the disk watch's,
// etcd's quota or an operator's: the writes would all be refused anyway):
// puts, transactions with a put and lease grants; deletes, compaction and
// reads go on. Held by TestRefusedWritesDoNotGrowTheWAL.

// refusesWrite reports whether s's cluster has a NOSPACE alarm raised and
// req is a request that etcd's capped applier would refuse for it.
func refusesWrite(s *etcdserver.EtcdServer, req any) bool {
	switch r := req.(type) {
	case *pb.PutRequest, *pb.LeaseGrantRequest:
	case *pb.TxnRequest:
		// BackendQuota's cost is what the capped applier refuses a
		// transaction by; it reads nothing of the quota itself.
		if (&storage.BackendQuota{}).Cost(r) == 0 {
			return false
		}
	default:
		return false
	}
	for _, a := range s.Alarms() {
		if a.Alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

// refuseWritesInterceptor is a gRPC server interceptor for the member's
// client listeners that refuses, before raft, what refusesWrite names. The
// server is set once etcd has made it (embed starts serving inside
// StartEtcd); until then requests pass, to be refused at apply if at all.
func refuseWritesInterceptor(server *atomic.Pointer[etcdserver.EtcdServer]) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if s := server.Load(); s != nil && refusesWrite(s, req) {
			return nil, rpctypes.ErrGRPCNoSpace
		}
		return handler(ctx, req)
	}
}

// inProcessClient is v3client.New(s) with writes refused before raft as
// the gRPC listeners refuse them: the in-process client calls etcd's
// servers directly, past any gRPC interceptor.
func inProcessClient(s *etcdserver.EtcdServer) *clientv3.Client {
	c := v3client.New(s)
	c.KV = clientv3.NewKVFromKVClient(adapter.KvServerToKvClient(refusingKV{KVServer: v3rpc.NewQuotaKVServer(s), s: s}), c)
	replaced := c.Lease
	// The same keep-alive timeout as v3client.New's lease client.
	c.Lease = clientv3.NewLeaseFromLeaseClient(adapter.LeaseServerToLeaseClient(refusingLease{LeaseServer: v3rpc.NewQuotaLeaseServer(s), s: s}), c, time.Second)
	_ = replaced.Close()
	return c
}

// refusingKV is etcd's KV server refusing what refusesWrite names.
type refusingKV struct {
	pb.KVServer
	s *etcdserver.EtcdServer
}

// Put refuses a put under NOSPACE, or passes it on.
func (k refusingKV) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	if refusesWrite(k.s, r) {
		return nil, rpctypes.ErrGRPCNoSpace
	}
	return k.KVServer.Put(ctx, r)
}

// Txn refuses a transaction that puts under NOSPACE, or passes it on.
func (k refusingKV) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if refusesWrite(k.s, r) {
		return nil, rpctypes.ErrGRPCNoSpace
	}
	return k.KVServer.Txn(ctx, r)
}

// refusingLease is etcd's lease server refusing grants under NOSPACE.
type refusingLease struct {
	pb.LeaseServer
	s *etcdserver.EtcdServer
}

// LeaseGrant refuses a grant under NOSPACE, or passes it on.
func (l refusingLease) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	if refusesWrite(l.s, r) {
		return nil, rpctypes.ErrGRPCNoSpace
	}
	return l.LeaseServer.LeaseGrant(ctx, r)
}
