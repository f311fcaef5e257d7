package etcd

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// --min-free-disk takes bytes and quantities, and shows its value as one.
func TestBytesFlag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"0": 0, "1048576": 1 << 20, "512Mi": 512 << 20, "1.5Gi": 3 << 29, "2G": 2e9} {
		var n int64
		v := (*bytesValue)(&n)
		if err := v.Set(in); err != nil || n != want {
			t.Errorf("--min-free-disk=%s: %d, %v; want %d", in, n, err, want)
		}
	}
	n := DefaultMinFreeDisk
	if got := (*bytesValue)(&n).String(); got != "512Mi" {
		t.Errorf("default shown as %q, want 512Mi", got)
	}
}

// TestOptionsNeedTLSOverTCP: a member that others reach over TCP needs
// TLS with a trusted CA, for a library caller as for `gcp etcd`.
func TestOptionsNeedTLSOverTCP(t *testing.T) {
	t.Parallel()
	o := NewOptions()
	o.ListenPeerURLs = []string{"http://127.0.0.1:2380"}
	var msgs []string
	for _, err := range o.Validate() {
		msgs = append(msgs, err.Error())
	}
	for _, want := range []string{`--listen-client-urls "https://127.0.0.1:2379" needs --trusted-ca-file`, `--listen-peer-urls "http://127.0.0.1:2380": plain http://`} {
		if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, want) }) {
			t.Errorf("Validate() = %q, want one containing %q", msgs, want)
		}
	}
	o = NewOptions()
	o.ListenClientURLs = []string{UnixSocketURL(filepath.Join(t.TempDir(), "etcd.sock"))}
	if errs := o.Validate(); len(errs) != 0 {
		t.Errorf("a unix socket needs no TLS: %v", errs)
	}
}
