package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// etcdAlarms are readiness checks for etcd's alarms, one per kind
// (etcd-alarm-nospace, etcd-alarm-corrupt): with NOSPACE raised etcd
// refuses every write while reads, and so k8s.io/apiserver's own etcd
// checks, go on, so without them the server would look ready to a load
// balancer while it can change nothing. An etcd that does not answer is
// the etcd check's to report, not these.
type etcdAlarms struct {
	transport storagebackend.TransportConfig

	mu      sync.Mutex
	checked time.Time
	alarms  []*etcdserverpb.AlarmMember
}

// etcdAlarmsCacheFor is how long one answer of etcd serves the checks, so
// that frequent probes do not each open a connection.
const etcdAlarmsCacheFor = time.Second

// checks returns the readiness checks.
func (a *etcdAlarms) checks() []healthz.HealthChecker {
	var checks []healthz.HealthChecker
	for _, alarm := range []etcdserverpb.AlarmType{etcdserverpb.AlarmType_NOSPACE, etcdserverpb.AlarmType_CORRUPT} {
		checks = append(checks, healthz.NamedCheck("etcd-alarm-"+strings.ToLower(alarm.String()), func(r *http.Request) error {
			for _, m := range a.list(r.Context()) {
				if m.Alarm == alarm {
					if alarm == etcdserverpb.AlarmType_NOSPACE {
						return fmt.Errorf("etcd member %x raised NOSPACE: its database reached --quota-backend-bytes, or its data dir has less free disk than --min-free-disk; "+
							"etcd refuses writes until space is freed and the alarm disarmed (docs/operations.md)", m.MemberID)
					}
					return fmt.Errorf("etcd member %x raised %s: it refuses writes until the cause is fixed and the alarm disarmed (docs/operations.md)", m.MemberID, alarm)
				}
			}
			return nil
		}))
	}
	return checks
}

// list returns the cluster's alarms, asked at most once per
// etcdAlarmsCacheFor; none when etcd does not answer.
func (a *etcdAlarms) list(ctx context.Context) []*etcdserverpb.AlarmMember {
	a.mu.Lock()
	defer a.mu.Unlock()
	if time.Since(a.checked) < etcdAlarmsCacheFor {
		return a.alarms
	}
	a.alarms = a.ask(ctx)
	a.checked = time.Now()
	return a.alarms
}

// ask opens a client for one question and closes it, so nothing of it
// outlives a check (etcd may stop before the server that checks it).
func (a *etcdAlarms) ask(ctx context.Context) []*etcdserverpb.AlarmMember {
	cfg, err := etcd.ClientConfig(a.transport.ServerList, a.transport.CertFile, a.transport.KeyFile, a.transport.TrustedCAFile, 2*time.Second)
	if err != nil {
		return nil
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		return nil
	}
	defer func() { _ = client.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := client.AlarmList(ctx)
	if err != nil {
		return nil
	}
	return resp.Alarms
}
