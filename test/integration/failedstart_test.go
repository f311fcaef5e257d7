package integration

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
	"github.com/gcp-project/gcp/test/poll"
)

// brokenGroup is an API group whose storage cannot be built: the API
// server fails after etcd has started.
type brokenGroup struct{}

func (brokenGroup) GroupName() string                   { return "broken.example.dev" }
func (brokenGroup) InstallScheme(*runtime.Scheme) error { return nil }
func (brokenGroup) NewRESTStorage(registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	return genericapiserver.APIGroupInfo{}, false, errors.New("broken on purpose")
}

// syncBuffer is a bytes.Buffer safe for klog's concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// captureKlog sends klog's output, each line once, to a buffer until the
// test ends. klog is global: tests that use it must not be parallel.
func captureKlog(t *testing.T) *syncBuffer {
	t.Helper()
	state := klog.CaptureState()
	t.Cleanup(func() {
		klog.Flush()
		state.Restore()
	})
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Set("stderrthreshold", "FATAL"); err != nil {
		t.Fatal(err)
	}
	klog.LogToStderr(false)
	// A test server routes klog through a logger of its own (pkg/testserver,
	// logs.go) once one has run in this binary; the state above restores it.
	klog.ClearLogger()
	// Without stderr, klog writes each line to its severity's output and
	// every lower one's: only INFO's gets them all, once.
	buf := &syncBuffer{}
	klog.SetOutput(io.Discard)
	klog.SetOutputBySeverity("INFO", buf)
	return buf
}

// TestFailedStart: when the API server cannot be built after etcd has
// started, Start returns that error at once, without the etcd clients'
// gRPC reconnect warnings, and leaves the data dir free for the next run.
func TestFailedStart(t *testing.T) {
	comp, err := layering.Generic().With(layering.Layer{Name: "broken", APIGroups: []registry.APIGroup{brokenGroup{}}}).Compose()
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()

	logs := captureKlog(t)
	failedCtx, cancelFailed := context.WithCancel(context.Background())
	defer cancelFailed()
	start := time.Now()
	cp, err := allinone.Start(failedCtx, allInOne(dataDir, nil), comp)
	took := time.Since(start)
	// What the etcd clients would log once Start has returned counts too:
	// gRPC redials a lost connection at once, then after a second. A
	// control client, whose every dial fails, started now, has dialled a
	// third time after two backoffs (at least 0.8 s and 1.28 s): a client
	// that lost its connection before Start returned has redialled after
	// its first backoff (at most 1.2 s) by then.
	dials := failingGRPCClient(t)
	poll.Until(t, 50*time.Millisecond, time.Minute, func() error {
		if n := dials.Load(); n < 3 {
			return fmt.Errorf("the control gRPC client has dialled %d times, want 3", n)
		}
		return nil
	})
	klog.Flush()
	out := logs.String()
	t.Logf("failed start took %s and logged %d lines (%d bytes):\n%s", took, strings.Count(out, "\n"), len(out), out)
	if err == nil {
		cancelFailed()
		_ = cp.Wait()
		t.Fatal("Start succeeded with a broken API group")
	}
	t.Logf("error: %v", err)
	if msg := err.Error(); !strings.Contains(msg, "broken on purpose") || !strings.Contains(msg, "broken.example.dev") {
		t.Errorf("error does not name the group and its failure: %v", err)
	}
	// A guard against a hang, not a timing test.
	if took > 30*time.Second {
		t.Errorf("failed start took %s", took)
	}
	var noisy []string
	for _, line := range strings.Split(out, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(line, failingGRPCTarget) {
			continue
		}
		if strings.Contains(l, "grpc") || strings.Contains(l, "addrconn") || strings.Contains(l, "transport: error while dialing") {
			noisy = append(noisy, line)
		}
	}
	if len(noisy) > 0 {
		t.Errorf("%d lines of gRPC noise after a failed start, the first:\n%s", len(noisy), strings.Join(noisy[:min(len(noisy), 3)], "\n"))
	}

	// The data dir is unlocked and etcd stopped: the plain stack starts on it.
	_, client := runAllInOne(t, allInOne(dataDir, nil), composeGeneric(t))
	ctx := context.Background()
	if err := testserver.WaitReady(ctx, client.Discovery().RESTClient(), time.Minute); err != nil {
		t.Fatalf("not ready after a failed start on the same data dir: %v", err)
	}
}

// failingGRPCTarget names the control client of failingGRPCClient in what
// gRPC logs of it.
const failingGRPCTarget = "failedstart-control"

// failingGRPCClient starts a gRPC client whose every dial fails, and
// returns how many times it has dialled: gRPC dials again after its
// connection backoff (1 s, then 1.6 times the last, each within 20 %),
// as it does for a client that lost its connection.
func failingGRPCClient(t *testing.T) *atomic.Int32 {
	t.Helper()
	dials := &atomic.Int32{}
	conn, err := grpc.NewClient("passthrough:///"+failingGRPCTarget,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("refused on purpose")
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	conn.Connect()
	return dials
}
