package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gcp-project/gcp/test/poll"
)

// startT starts cfg and closes the member when the test ends.
func startT(t *testing.T, cfg Config) *Handle {
	t.Helper()
	h, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// inProcessT is h's in-process client (what `gcp start`'s API server
// uses), closed when the test ends.
func inProcessT(t *testing.T, h *Handle) *clientv3.Client {
	t.Helper()
	c := h.InProcessClient()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newClient(t *testing.T, endpoints []string, tlsConfig *tls.Config) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsConfig, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("clientv3.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func put(t *testing.T, c *clientv3.Client, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, key, value); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func get(t *testing.T, c *clientv3.Client, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("get %s: %d values, want 1", key, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

// The member runs with the heartbeat and election timeout asked for, and a
// restarted single member, which elects itself within 1 to 10 heartbeats,
// serves again.
func TestHeartbeatAndElectionTimeout(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(filepath.Join(t.TempDir(), "etcd"))
	cfg.HeartbeatInterval, cfg.ElectionTimeout = 50*time.Millisecond, 250*time.Millisecond
	h := startT(t, cfg)
	if ec := h.etcd.Config(); ec.TickMs != 50 || ec.ElectionMs != 250 {
		t.Fatalf("member runs with heartbeat %d ms and election timeout %d ms, want 50 and 250", ec.TickMs, ec.ElectionMs)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = startT(t, cfg)
	put(t, newClient(t, h.ClientURLs(), nil), "after-restart", "v")
}

func TestStartOnUnixSocketOnly(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etcd")
	h := startT(t, DefaultConfig(dir))

	select {
	case <-h.Ready():
	default:
		t.Fatal("Ready is not closed after Start returned")
	}
	want := "unix://" + filepath.Join(dir, "etcd.sock")
	if got := h.ClientURLs(); len(got) != 1 || got[0] != want {
		t.Fatalf("ClientURLs() = %v, want [%s]", got, want)
	}
	if n := len(h.etcd.Peers); n != 0 {
		t.Errorf("%d peer listeners, want none", n)
	}
	for _, l := range h.etcd.Clients {
		if l.Addr().Network() != "unix" {
			t.Errorf("client listener on %s %s, want only unix sockets", l.Addr().Network(), l.Addr())
		}
	}

	c := newClient(t, h.ClientURLs(), nil)
	put(t, c, "/greeting", "hello")
	if got := get(t, c, "/greeting"); got != "hello" {
		t.Fatalf("got %q, want hello", got)
	}
}

func TestDataDirIsPrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etcd")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	startT(t, DefaultConfig(dir))
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o700 {
		t.Errorf("data dir mode %o, want 700", mode)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etcd")
	h, err := Start(context.Background(), DefaultConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.Close()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent Close %d: %v", i, err)
		}
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close after Close: %v", err)
	}
	select {
	case err := <-h.Err():
		t.Errorf("Err() delivered %v after Close", err)
	default:
	}
	if _, err := os.Lstat(filepath.Join(dir, "etcd.sock")); !os.IsNotExist(err) {
		t.Errorf("socket still exists after Close (Lstat: %v)", err)
	}
}

func TestRestartKeepsData(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(filepath.Join(t.TempDir(), "etcd"))
	h, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: h.ClientURLs(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, "kept", "yes")
	_ = c.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	h = startT(t, cfg)
	if got := get(t, newClient(t, h.ClientURLs(), nil), "kept"); got != "yes" {
		t.Fatalf("after restart got %q, want yes", got)
	}
}

func TestSecondStartOnSameDataDirFails(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	cfg := DefaultConfig(filepath.Join(base, "etcd"))
	h := startT(t, cfg)

	second := cfg
	second.ListenClientURLs = []string{UnixSocketURL(filepath.Join(base, "second.sock"))}
	h2, err := Start(context.Background(), second)
	if err == nil {
		_ = h2.Close()
		t.Fatal("second Start on the same data dir succeeded")
	}
	if !strings.Contains(err.Error(), "in use") {
		t.Errorf("error %q does not say the data dir is in use", err)
	}
	c := newClient(t, h.ClientURLs(), nil)
	put(t, c, "still", "serving")
}

func TestStartRefusesToReplaceAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notASocket := filepath.Join(dir, "precious")
	if err := os.WriteFile(notASocket, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(filepath.Join(dir, "etcd"))
	cfg.ListenClientURLs = []string{UnixSocketURL(notASocket)}
	if h, err := Start(context.Background(), cfg); err == nil {
		_ = h.Close()
		t.Fatal("Start succeeded over a regular file")
	}
	if b, err := os.ReadFile(notASocket); err != nil || string(b) != "data" {
		t.Errorf("the file was changed: %q, %v", b, err)
	}
}

// TestStartEndsWithItsContext: a member that cannot be ready (one of a
// cluster of two whose other member never comes, so it has no quorum)
// returns from Start soon after its context is done (a signal during a
// start), not at its ready timeout, and leaves the data dir unlocked.
func TestStartEndsWithItsContext(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etcd")
	cfg := DefaultConfig(dir)
	me, other := "http://"+freeAddr(t), "http://"+freeAddr(t)
	cfg.ListenPeerURLs = []string{me}
	cfg.InitialCluster = DefaultName + "=" + me + ",other=" + other
	cfg.ReadyTimeout = 5 * time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(2*time.Second, cancel)
	began := time.Now()
	h, err := Start(ctx, cfg)
	if err == nil {
		_ = h.Close()
		t.Fatal("Start succeeded without a quorum")
	}
	took := time.Since(began)
	t.Logf("after %s: %v", took, err)
	if !errors.Is(err, context.Canceled) || took > 30*time.Second {
		t.Fatalf("Start: %v after %s, want context.Canceled soon after 2s", err, took)
	}
	poll.Until(t, 100*time.Millisecond, 30*time.Second, func() error {
		l, err := lockDataDir(dir)
		if err != nil {
			return err
		}
		return l.Close()
	})
}
