package etcd

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"

	gcpetcd "github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// execute runs `gcp etcd args...` and returns RunE's error.
func execute(ctx context.Context, args ...string) error {
	cmd := NewCommand(ctx, "gcp")
	cmd.SetArgs(args)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	return cmd.Execute()
}

// TestBadFlagsAreOneLineErrors: every problem with the flags, on one line,
// joined as the other commands join theirs (utilerrors.NewAggregate).
func TestBadFlagsAreOneLineErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := "--listen-client-urls=" + gcpetcd.UnixSocketURL(filepath.Join(dir, "etcd.sock"))
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"empty data dir":      {[]string{"--data-dir=", sock}, []string{"--data-dir must not be empty"}},
		"bad URL":             {[]string{"--data-dir=" + dir, "--listen-client-urls=ftp://127.0.0.1:2379"}, []string{`unsupported scheme "ftp"`}},
		"malformed URL":       {[]string{"--data-dir=" + dir, "--listen-client-urls=https://[::1"}, []string{"malformed URL"}},
		"plain http":          {[]string{"--data-dir=" + dir, "--listen-client-urls=http://127.0.0.1:2379"}, []string{"plain http://"}},
		"defaults need CA":    {[]string{"--data-dir=" + dir}, []string{"needs --trusted-ca-file", "--cert-file and --key-file"}},
		"plain http peer":     {[]string{"--data-dir=" + dir, sock, "--listen-peer-urls=http://127.0.0.1:2380"}, []string{"--listen-peer-urls", "plain http://"}},
		"two problems":        {[]string{"--data-dir=", "--listen-client-urls=ftp://x:1"}, []string{"[--data-dir must not be empty, --listen-client-urls", "ftp"}},
		"min free disk words": {[]string{"--data-dir=" + dir, sock, "--min-free-disk=lots"}, []string{`"--min-free-disk"`, "512Mi"}},
		"negative free disk":  {[]string{"--data-dir=" + dir, sock, "--min-free-disk=-1Mi"}, []string{`"--min-free-disk"`, "non-negative"}},
		"fractional bytes":    {[]string{"--data-dir=" + dir, sock, "--min-free-disk=0.5"}, []string{`"--min-free-disk"`, "whole"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := execute(context.Background(), tc.args...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
		})
	}
}

func TestServesOnUnixSocketUntilCancelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	endpoint := gcpetcd.UnixSocketURL(filepath.Join(dir, "etcd.sock"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- execute(ctx, "--data-dir="+filepath.Join(dir, "etcd"), "--listen-client-urls="+endpoint, "--name=test")
	}()

	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	// The client waits until the command's socket serves.
	reqCtx, reqCancel := context.WithTimeout(ctx, 30*time.Second)
	defer reqCancel()
	if _, err := c.Put(reqCtx, "k", "v"); err != nil {
		select {
		case runErr := <-done:
			t.Fatalf("command returned %v", runErr)
		default:
			t.Fatalf("put through the command's socket: %v", err)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("command returned %v after cancel, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("command did not return after cancel")
	}
}

func TestHelpHasSections(t *testing.T) {
	t.Parallel()
	cmd := NewCommand(context.Background(), "gcp")
	var out bytes.Buffer
	cmd.SetOut(&out)
	if err := cmd.Help(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	etcdAt, tlsAt := strings.Index(help, "Etcd flags:"), strings.Index(help, "TLS flags:")
	if etcdAt < 0 || tlsAt < 0 {
		t.Fatalf("help lacks the etcd or TLS section:\n%s", help)
	}
	for _, f := range []string{"--name", "--data-dir", "--listen-client-urls", "--initial-cluster-state", "--quota-backend-bytes", "--log-level"} {
		if i := strings.Index(help, "      "+f+" "); i < etcdAt || i > tlsAt {
			t.Errorf("%s is not in the etcd section", f)
		}
	}
	for _, f := range []string{"--cert-file", "--trusted-ca-file", "--client-cert-auth", "--peer-key-file", "--peer-client-cert-auth"} {
		if i := strings.Index(help, "      "+f+" "); i < tlsAt {
			t.Errorf("%s is not in the TLS section", f)
		}
	}
}

// TestCLIDefaultsAreTheLibrarys: `gcp etcd` with no flags runs the member
// a library caller gets from etcd.NewOptions, field for field: registering
// a flag sets no default of its own.
func TestCLIDefaultsAreTheLibrarys(t *testing.T) {
	t.Parallel()
	cli := gcpetcd.NewOptions()
	cmd := newCommand(context.Background(), "gcp", cli)
	if err := cmd.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(gcpetcd.NewOptions(), cli); diff != "" {
		t.Errorf("gcp etcd's defaults differ from etcd.NewOptions (-library +cli):\n%s", diff)
	}
}
