package etcd

import (
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ClientConfig is a quiet client configuration for endpoints: with a
// client certificate (certFile, keyFile) and the members checked against
// caFile when either is given, as TCP members need; unix sockets need
// neither.
func ClientConfig(endpoints []string, certFile, keyFile, caFile string, dialTimeout time.Duration) (clientv3.Config, error) {
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: dialTimeout, Logger: zap.NewNop()}
	if certFile == "" && caFile == "" {
		return cfg, nil
	}
	tlsConfig, err := transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: caFile}.ClientConfig()
	if err != nil {
		return cfg, fmt.Errorf("etcd client TLS: %w", err)
	}
	cfg.TLS = tlsConfig
	return cfg, nil
}
