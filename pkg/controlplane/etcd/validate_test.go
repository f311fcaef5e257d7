package etcd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestUnixSocketURL(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"/run/gcp/etcd.sock": "unix:///run/gcp/etcd.sock",
		"rel/etcd.sock":      "unix://" + filepath.Join(wd, "rel/etcd.sock"),
	} {
		if got := UnixSocketURL(in); got != want {
			t.Errorf("UnixSocketURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	longDir := "/" + strings.Repeat("d", maxSocketPath)
	tls := TLSInfo{CertFile: "c.pem", KeyFile: "k.pem", TrustedCAFile: "ca.pem", ClientCertAuth: true}
	for name, tc := range map[string]struct {
		mutate func(*Config)
		want   string // substring of the error; empty means valid
	}{
		"default":               {func(*Config) {}, ""},
		"zero values defaulted": {func(c *Config) { c.Name, c.LogLevel, c.InitialClusterState, c.ReadyTimeout = "", "", "", 0 }, ""},
		"https with TLS":        {func(c *Config) { c.ListenClientURLs, c.ClientTLS = []string{"https://127.0.0.1:2379"}, tls }, ""},
		"peers with TLS": {func(c *Config) {
			c.ListenPeerURLs, c.PeerTLS = []string{"https://10.0.0.1:2380"}, tls
			c.InitialCluster = "gcp=https://10.0.0.1:2380,b=https://10.0.0.2:2380"
		}, ""},
		"empty data dir":    {func(c *Config) { c.DataDir = "" }, "--data-dir must not be empty"},
		"no client URLs":    {func(c *Config) { c.ListenClientURLs = nil }, "--listen-client-urls must not be empty"},
		"malformed URL":     {func(c *Config) { c.ListenClientURLs = []string{"http://[::1"} }, "malformed URL"},
		"unsupported":       {func(c *Config) { c.ListenClientURLs = []string{"ftp://127.0.0.1:21"} }, `unsupported scheme "ftp"`},
		"no port":           {func(c *Config) { c.ListenClientURLs = []string{"http://127.0.0.1"} }, "want http://host:port"},
		"port 0":            {func(c *Config) { c.ListenClientURLs = []string{"http://127.0.0.1:0"} }, "from 1 to 65535"},
		"path":              {func(c *Config) { c.ListenClientURLs = []string{"http://127.0.0.1:2379/x"} }, "no user, path"},
		"listen hostname":   {func(c *Config) { c.ListenClientURLs = []string{"http://example.com:2379"} }, "must be an IP address"},
		"relative socket":   {func(c *Config) { c.ListenClientURLs = []string{"unix://etcd.sock"} }, "absolute/path"},
		"one-slash socket":  {func(c *Config) { c.ListenClientURLs = []string{"unix:/x/etcd.sock"} }, "absolute/path"},
		"long socket":       {func(c *Config) { c.ListenClientURLs = []string{"unix://" + longDir} }, "more than the 107"},
		"unix peer":         {func(c *Config) { c.ListenPeerURLs = []string{"unix:///x/peer.sock"} }, `--listen-peer-urls "unix:///x/peer.sock": unsupported scheme`},
		"https without key": {func(c *Config) { c.ListenClientURLs = []string{"https://127.0.0.1:2379"} }, "need --cert-file and --key-file"},
		"cert without key":  {func(c *Config) { c.ClientTLS.CertFile = "c.pem" }, "--cert-file and --key-file must be set together"},
		"auth without CA": {func(c *Config) {
			c.ListenClientURLs, c.ClientTLS = []string{"https://127.0.0.1:2379"}, tls
			c.ClientTLS.TrustedCAFile = ""
		}, "--client-cert-auth needs --trusted-ca-file"},
		"auth on plain URL": {func(c *Config) { c.ClientTLS = tls }, "--client-cert-auth needs an https:// client URL"},
		"peer auth without CA": {func(c *Config) {
			c.ListenPeerURLs, c.PeerTLS = []string{"https://10.0.0.1:2380"}, tls
			c.PeerTLS.TrustedCAFile = ""
		}, "--peer-client-cert-auth needs --peer-trusted-ca-file"},
		"unspecified without advertise": {func(c *Config) { c.ListenClientURLs = []string{"http://0.0.0.0:2379"} }, "--advertise-client-urls is required"},
		"bad cluster state":             {func(c *Config) { c.InitialClusterState = "old" }, "--initial-cluster-state"},
		"cluster without me":            {func(c *Config) { c.InitialCluster = "other=http://10.0.0.2:2380" }, `no member named "gcp"`},
		"cluster without peers":         {func(c *Config) { c.InitialCluster = "gcp=http://10.0.0.1:2380,b=http://10.0.0.2:2380" }, "--listen-peer-urls must be set"},
		"metrics on loopback":           {func(c *Config) { c.ListenMetricsURLs = []string{"http://127.0.0.1:2381", "http://[::1]:2381"} }, ""},
		"plain metrics off loopback":    {func(c *Config) { c.ListenMetricsURLs = []string{"http://10.0.0.1:2381"} }, "plain http:// only on a loopback address"},
		"https metrics without cert":    {func(c *Config) { c.ListenMetricsURLs = []string{"https://10.0.0.1:2381"} }, "https:// needs --cert-file"},
		"unix metrics":                  {func(c *Config) { c.ListenMetricsURLs = []string{"unix:///x/m.sock"} }, `--listen-metrics-urls "unix:///x/m.sock": unsupported scheme`},
		"negative quota":                {func(c *Config) { c.QuotaBackendBytes = -1 }, "--quota-backend-bytes"},
		"negative min free disk":        {func(c *Config) { c.MinFreeDisk = -1 }, "--min-free-disk must not be negative"},
		"no free disk watch":            {func(c *Config) { c.MinFreeDisk = 0 }, ""},
		"bad log level":                 {func(c *Config) { c.LogLevel = "loud" }, "--log-level"},
		"short heartbeats":              {func(c *Config) { c.HeartbeatInterval, c.ElectionTimeout = 50*time.Millisecond, 250*time.Millisecond }, ""},
		"election under 5 heartbeats":   {func(c *Config) { c.HeartbeatInterval, c.ElectionTimeout = 50*time.Millisecond, 200*time.Millisecond }, "at least 5 times --heartbeat-interval"},
		"heartbeat over default/5":      {func(c *Config) { c.HeartbeatInterval = 300 * time.Millisecond }, "--election-timeout (1s) must be at least 5 times"},
		"fractional heartbeat":          {func(c *Config) { c.HeartbeatInterval = 1500 * time.Microsecond }, "whole number of milliseconds"},
		"negative election":             {func(c *Config) { c.ElectionTimeout = -time.Second }, "--election-timeout"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig("/var/lib/gcp/etcd")
			tc.mutate(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("no error, want one containing %q", tc.want)
			case err != nil && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not contain %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("error %q is more than one line", err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	cfg := Config{ListenClientURLs: []string{"ftp://x"}, LogLevel: "loud"}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"--data-dir", "ftp", "--log-level"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
