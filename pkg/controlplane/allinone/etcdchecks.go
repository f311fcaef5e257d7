package allinone

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
)

// A server that fails to start after etcd has started must leave no etcd
// client behind: left open, gRPC clients keep etcd's graceful stop waiting
// for their streams (etcd's request timeout) and then redial the closed
// socket, each failure a gRPC warning in the log. The storage built so far
// is destroyed by apiserver.CompletedConfig.New and Server.PrepareRun when
// they fail (pkg/controlplane/apiserver/failedstart.go). The etcd health
// checks, which k8s.io/apiserver's etcd options create with the
// configuration and close only when a running server has drained, are
// etcdChecks below, whose clients Start creates once etcd runs and closes
// itself, before etcd (TestFailedStart holds both).

// etcdChecks are the etcd health and readiness checks that
// k8s.io/apiserver's EtcdOptions adds (same names, groups and endpoints),
// with a difference: their etcd clients are created by start, once the
// server is built, and closed when the stop channel given to start is
// closed, instead of from configuration until the server has drained.
// Until start, the checks fail as the library's do before their client
// connects.
type etcdChecks []*etcdCheck

type etcdCheck struct {
	config storagebackend.Config
	create func(storagebackend.Config, <-chan struct{}) (func() error, error)
	check  atomic.Pointer[func() error]
}

func (c *etcdCheck) run(*http.Request) error {
	if f := c.check.Load(); f != nil {
		return (*f)()
	}
	return errors.New("etcd client connection not yet established")
}

// addEtcdChecks adds the checks of o's servers (and of its
// --etcd-servers-overrides) to every config, as
// EtcdOptions.ApplyWithStorageFactoryTo does unless SkipHealthEndpoints.
func addEtcdChecks(o *genericoptions.EtcdOptions, configs ...*genericapiserver.Config) (etcdChecks, error) {
	var checks etcdChecks
	var health, ready []healthz.HealthChecker
	add := func(sc storagebackend.Config, healthName, readyName string) {
		h := &etcdCheck{config: sc, create: factory.CreateHealthCheck}
		r := &etcdCheck{config: sc, create: factory.CreateReadyCheck}
		checks = append(checks, h, r)
		health = append(health, healthz.NamedGroupedCheck(healthName, "etcd", h.run))
		ready = append(ready, healthz.NamedGroupedCheck(readyName, "etcd-readiness", r.run))
	}
	add(o.StorageConfig, "etcd", "etcd-readiness")
	if len(o.EtcdServersOverrides) > 0 {
		overrides, err := genericoptions.ParseEtcdServersOverrides(o.EtcdServersOverrides)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, override := range overrides {
			servers := append([]string(nil), override.Servers...)
			sort.Strings(servers)
			key := strings.Join(servers, ";")
			if seen[key] {
				continue
			}
			seen[key] = true
			sc := o.StorageConfig
			sc.Transport.ServerList = override.Servers
			add(sc, fmt.Sprintf("etcd-override-%d", len(seen)-1), fmt.Sprintf("etcd-override-readiness-%d", len(seen)-1))
		}
	}
	for _, c := range configs {
		c.AddHealthChecks(health...)
		c.AddReadyzChecks(ready...)
	}
	return checks, nil
}

// start creates the checks' etcd clients; they are closed when stop is.
func (cs etcdChecks) start(stop <-chan struct{}) error {
	for _, c := range cs {
		f, err := c.create(c.config, stop)
		if err != nil {
			return fmt.Errorf("etcd health check: %w", err)
		}
		c.check.Store(&f)
	}
	return nil
}
