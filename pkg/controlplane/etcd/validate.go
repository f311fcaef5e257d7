package etcd

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.uber.org/zap/zapcore"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Validate reports every problem with c in one line, or nil.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.DataDir == "" {
		add("--data-dir must not be empty")
	}
	if len(c.ListenClientURLs) == 0 {
		add("--listen-client-urls must not be empty")
	}
	listenClients, clientErrs := parseURLs("--listen-client-urls", c.ListenClientURLs, clientSchemes, true)
	errs = append(errs, clientErrs...)
	_, advErrs := parseURLs("--advertise-client-urls", c.AdvertiseClientURLs, clientSchemes, false)
	errs = append(errs, advErrs...)
	if len(c.AdvertiseClientURLs) == 0 && anyUnspecified(listenClients) {
		add("--advertise-client-urls is required when --listen-client-urls has an unspecified address (0.0.0.0 or ::)")
	}
	errs = append(errs, c.ClientTLS.validate("", "client", listenClients)...)
	metrics, metricsErrs := parseURLs("--listen-metrics-urls", c.ListenMetricsURLs, peerSchemes, true)
	errs = append(errs, metricsErrs...)
	for _, u := range metrics {
		switch {
		case u.Scheme == "http" && !isLoopback(u.Hostname()):
			add("--listen-metrics-urls %q: plain http:// only on a loopback address (127.0.0.1, ::1 or localhost), or use https://", u.String())
		case u.Scheme == "https" && (c.ClientTLS.CertFile == "" || c.ClientTLS.KeyFile == ""):
			add("--listen-metrics-urls %q: https:// needs --cert-file and --key-file", u.String())
		}
	}

	listenPeers, peerErrs := parseURLs("--listen-peer-urls", c.ListenPeerURLs, peerSchemes, true)
	errs = append(errs, peerErrs...)
	_, advPeerErrs := parseURLs("--initial-advertise-peer-urls", c.InitialAdvertisePeerURLs, peerSchemes, false)
	errs = append(errs, advPeerErrs...)
	if len(c.InitialAdvertisePeerURLs) == 0 && anyUnspecified(listenPeers) {
		add("--initial-advertise-peer-urls is required when --listen-peer-urls has an unspecified address (0.0.0.0 or ::)")
	}
	errs = append(errs, c.PeerTLS.validate("peer-", "peer", listenPeers)...)

	heartbeat := cmp.Or(c.HeartbeatInterval, defaultHeartbeat)
	election := cmp.Or(c.ElectionTimeout, defaultElection)
	switch {
	case heartbeat < 0 || heartbeat%time.Millisecond != 0:
		add("--heartbeat-interval %v: want a whole number of milliseconds", heartbeat)
	case election < 0 || election%time.Millisecond != 0:
		add("--election-timeout %v: want a whole number of milliseconds", election)
	case election < 5*heartbeat:
		add("--election-timeout (%v) must be at least 5 times --heartbeat-interval (%v)", election, heartbeat)
	}

	if c.InitialCluster != "" {
		members, err := types.NewURLsMap(c.InitialCluster)
		switch {
		case err != nil:
			add("--initial-cluster %q: %v", c.InitialCluster, err)
		case members[c.name()] == nil:
			add("--initial-cluster %q has no member named %q (--name)", c.InitialCluster, c.name())
		case len(members) > 1 && len(c.ListenPeerURLs) == 0:
			add("--initial-cluster has %d members, so --listen-peer-urls must be set", len(members))
		}
	}
	switch c.InitialClusterState {
	case "", ClusterStateNew, ClusterStateExisting:
	default:
		add("--initial-cluster-state must be %q or %q, got %q", ClusterStateNew, ClusterStateExisting, c.InitialClusterState)
	}
	if c.QuotaBackendBytes < 0 {
		add("--quota-backend-bytes must not be negative, got %d", c.QuotaBackendBytes)
	}
	if c.MinFreeDisk < 0 {
		add("--min-free-disk must not be negative, got %d", c.MinFreeDisk)
	}
	if _, err := zapcore.ParseLevel(c.logLevel()); err != nil {
		add("--log-level must be debug, info, warn or error, got %q", c.LogLevel)
	}
	if c.ReadyTimeout < 0 {
		add("ready timeout must not be negative, got %s", c.ReadyTimeout)
	}
	return utilerrors.NewAggregate(errs)
}

var (
	clientSchemes = []string{"http", "https", "unix", "unixs"}
	peerSchemes   = []string{"http", "https"}
)

func isSecure(scheme string) bool { return scheme == "https" || scheme == "unixs" }

// validate checks one side's TLS settings against the URLs it listens on.
func (t TLSInfo) validate(flagPrefix, kind string, listen []*url.URL) []error {
	var errs []error
	secure := false
	for _, u := range listen {
		secure = secure || isSecure(u.Scheme)
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		errs = append(errs, fmt.Errorf("--%scert-file and --%skey-file must be set together", flagPrefix, flagPrefix))
	}
	if secure && (t.CertFile == "" || t.KeyFile == "") {
		errs = append(errs, fmt.Errorf("https:// and unixs:// %s URLs need --%scert-file and --%skey-file", kind, flagPrefix, flagPrefix))
	}
	if t.ClientCertAuth && t.TrustedCAFile == "" {
		errs = append(errs, fmt.Errorf("--%sclient-cert-auth needs --%strusted-ca-file", flagPrefix, flagPrefix))
	}
	if t.ClientCertAuth && len(listen) > 0 && !secure {
		errs = append(errs, fmt.Errorf("--%sclient-cert-auth needs an https:// %s URL: plain URLs cannot check certificates", flagPrefix, kind))
	}
	return errs
}

// parseURLs parses and checks each URL of one flag; listen URLs must be
// bindable (an IP address and a non-zero port, or an absolute socket path).
func parseURLs(flag string, raws []string, schemes []string, listen bool) ([]*url.URL, []error) {
	var urls []*url.URL
	var errs []error
	for _, raw := range raws {
		u, err := parseURL(raw, schemes, listen)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", flag, raw, err))
			continue
		}
		urls = append(urls, u)
	}
	return urls, errs
}

func parseURL(raw string, schemes []string, listen bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("malformed URL: %w", err)
	}
	if !slices.Contains(schemes, u.Scheme) {
		return nil, fmt.Errorf("unsupported scheme %q (want %s)", u.Scheme, strings.Join(schemes, ", "))
	}
	if isUnix(u.Scheme) {
		path := strings.TrimPrefix(raw, u.Scheme+"://")
		if u.Host != "" || path != u.Path || !filepath.IsAbs(path) {
			return nil, fmt.Errorf("want %s:///absolute/path/to/socket (no %%-escapes, ? or #)", u.Scheme)
		}
		if len(path) > maxSocketPath {
			return nil, fmt.Errorf("socket path is %d bytes, more than the %d a unix socket allows; use a shorter directory", len(path), maxSocketPath)
		}
		return u, nil
	}
	if u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("want %s://host:port with no user, path, query or fragment", u.Scheme)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return nil, fmt.Errorf("want %s://host:port", u.Scheme)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	if listen && host != "localhost" && net.ParseIP(host) == nil {
		return nil, fmt.Errorf("listen host %q must be an IP address or localhost", host)
	}
	return u, nil
}

// isLoopback reports whether host is localhost or a loopback IP address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func anyUnspecified(urls []*url.URL) bool {
	for _, u := range urls {
		if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
			return true
		}
	}
	return false
}
