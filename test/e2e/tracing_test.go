package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"

	"github.com/gcp-project/gcp/test/poll"
)

// otlpReceiverEnv, when set, makes the e2e test binary an OTLP gRPC trace
// receiver instead of running tests: a process of its own, which a test
// can SIGKILL. Its value is a directory where the receiver writes
// "address" once it serves and appends every span it receives to
// spans.jsonl, one receivedSpan a line.
const otlpReceiverEnv = "GCP_E2E_OTLP_RECEIVER_DIR"

func init() {
	// Before TestMain: a receiver process builds nothing and runs no test.
	if dir := os.Getenv(otlpReceiverEnv); dir != "" {
		if err := serveOTLP(dir); err != nil {
			fmt.Fprintln(os.Stderr, "OTLP receiver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// receivedSpan is a span as the receiver writes it down.
type receivedSpan struct {
	Service string `json:"service"`
	Trace   string `json:"trace"`
	Span    string `json:"span"`
	Parent  string `json:"parent"`
	Name    string `json:"name"`
	// Attributes are the span's string attributes.
	Attributes map[string]string `json:"attributes"`
}

// otlpReceiver is the OpenTelemetry collector's trace service, writing
// what it receives to a file.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu  sync.Mutex
	out *os.File
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				attrs := map[string]string{}
				for _, kv := range s.GetAttributes() {
					if v, ok := kv.GetValue().GetValue().(*commonpb.AnyValue_StringValue); ok {
						attrs[kv.GetKey()] = v.StringValue
					}
				}
				if err := enc.Encode(receivedSpan{Service: service, Trace: hex.EncodeToString(s.GetTraceId()), Span: hex.EncodeToString(s.GetSpanId()),
					Parent: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Attributes: attrs}); err != nil {
					return nil, err
				}
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.out.Write(buf.Bytes()); err != nil {
		return nil, err
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// serveOTLP runs the receiver on a free loopback port until killed.
func serveOTLP(dir string) error {
	out, err := os.OpenFile(filepath.Join(dir, "spans.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(s, &otlpReceiver{out: out})
	if err := os.WriteFile(filepath.Join(dir, "address.tmp"), []byte(l.Addr().String()), 0o600); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, "address.tmp"), filepath.Join(dir, "address")); err != nil {
		return err
	}
	return s.Serve(l)
}

// otlpReceiverProcess is a running receiver.
type otlpReceiverProcess struct {
	proc    *process
	dir     string
	address string
}

// startOTLPReceiver runs the test binary as a receiver and waits until it
// serves.
func startOTLPReceiver(t *testing.T) *otlpReceiverProcess {
	t.Helper()
	dir := t.TempDir()
	p := &process{cmd: exec.Command(os.Args[0]), log: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), otlpReceiverEnv+"="+dir)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.done })
	var address []byte
	poll.Until(t, 50*time.Millisecond, 30*time.Second, func() error {
		var err error
		if address, err = os.ReadFile(filepath.Join(dir, "address")); err == nil {
			return nil
		}
		select {
		case <-p.done:
			t.Fatalf("the OTLP receiver exited:\n%s", p.log)
		default:
		}
		return fmt.Errorf("the OTLP receiver is not serving:\n%s", p.log)
	})
	return &otlpReceiverProcess{proc: p, dir: dir, address: string(address)}
}

// spans returns the spans received so far.
func (r *otlpReceiverProcess) spans(t *testing.T) []receivedSpan {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.dir, "spans.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var spans []receivedSpan
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.HasSuffix(line, "\n") {
			break // being written
		}
		var s receivedSpan
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("spans.jsonl: %v: %q", err, line)
		}
		spans = append(spans, s)
	}
	return spans
}

// kill SIGKILLs the receiver.
func (r *otlpReceiverProcess) kill() {
	_ = r.proc.cmd.Process.Signal(syscall.SIGKILL)
	<-r.proc.done
}

// tracingConfig writes a TracingConfiguration sampling every request and
// sending to endpoint, and returns its path.
func tracingConfig(t *testing.T, endpoint string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tracing.yaml")
	content := "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: " + endpoint + "\nsamplingRatePerMillion: 1000000\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// createdConfigMapTrace waits until r has received the trace of the POST
// that created ConfigMap name in namespace default: the API server's HTTP
// server span with, under it, the storage's "Create etcd3" span for the
// ConfigMap's key and an etcd client span. It returns the names of the
// spans under the server span.
func createdConfigMapTrace(t *testing.T, r *otlpReceiverProcess, name string) []string {
	t.Helper()
	var found []string
	poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
		spans := r.spans(t)
		byID := map[string]receivedSpan{}
		for _, s := range spans {
			byID[s.Span] = s
		}
		posts := 0
		for _, root := range spans {
			// otelhttp names the span "<method> <route>".
			if !strings.HasSuffix(root.Name, "/api/v1/namespaces/{:namespace}/configmaps") || root.Service != "apiserver" || method(root) != "POST" {
				continue
			}
			posts++
			var under []string
			created := false
			for _, s := range spans {
				if s.Trace == root.Trace && descends(s, root, byID) {
					under = append(under, s.Name)
					created = created || s.Name == "Create etcd3" && strings.HasSuffix(s.Attributes["key"], "/default/"+name)
				}
			}
			if created && containsPrefix(under, "etcdserverpb.KV/Txn") {
				found = under
				return nil
			}
		}
		return fmt.Errorf("no trace of POST configmaps %s with an etcdserverpb.KV/Txn span among %d spans received (%d POSTs of ConfigMaps)", name, len(spans), posts)
	})
	return found
}

// method is an HTTP server span's method, by the current or the older
// semantic conventions.
func method(s receivedSpan) string {
	if m := s.Attributes["http.request.method"]; m != "" {
		return m
	}
	return s.Attributes["http.method"]
}

// descends reports whether s is below ancestor in byID's tree.
func descends(s, ancestor receivedSpan, byID map[string]receivedSpan) bool {
	for seen := 0; s.Parent != "" && seen < len(byID); seen++ {
		if s.Parent == ancestor.Span {
			return true
		}
		parent, ok := byID[s.Parent]
		if !ok {
			return false
		}
		s = parent
	}
	return false
}

func containsPrefix(names []string, prefix string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

var droppedSpansLine = regexp.MustCompile(`(?m)^apiserver_tracing_dropped_spans_total\{reason="[a-z_]+"\} ([0-9.e+]+)$`)

// droppedSpans sums apiserver_tracing_dropped_spans_total on /metrics.
func droppedSpans(t *testing.T, a *allInOne, server ...string) float64 {
	t.Helper()
	args := []string{"get", "--raw", "/metrics"}
	if len(server) > 0 {
		args = append([]string{"--server", server[0]}, args...)
	}
	var sum float64
	for _, m := range droppedSpansLine.FindAllStringSubmatch(a.kubectl(args...), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}

// testTracing checks a control plane exporting to r: `kubectl create
// configmap` is one trace with the API server's span and etcd's client
// spans under it; with r killed, requests still succeed and the dropped
// spans are counted.
func testTracing(t *testing.T, a *allInOne, r *otlpReceiverProcess) {
	t.Helper()
	a.kubectl("create", "configmap", "traced", "-n", "default", "--from-literal", "a=b")
	under := createdConfigMapTrace(t, r, "traced")
	t.Logf("spans under the POST: %v", under)
	for _, want := range []string{"Create etcd3", "etcdserverpb.KV/Txn"} {
		if !containsPrefix(under, want) {
			t.Errorf("no %s span under the POST; got %v", want, under)
		}
	}

	before := droppedSpans(t, a)
	r.kill()
	// Requests do not wait for the receiver (no timing assertion: they
	// succeed, each within kubectl's own timeout).
	for i := range 5 {
		a.kubectl("--request-timeout", "20s", "create", "configmap", fmt.Sprintf("untraced-%d", i), "-n", "default")
		a.kubectl("--request-timeout", "20s", "get", "configmap", fmt.Sprintf("untraced-%d", i), "-n", "default")
	}
	poll.Until(t, 200*time.Millisecond, 90*time.Second, func() error {
		if after := droppedSpans(t, a); after <= before {
			return fmt.Errorf("apiserver_tracing_dropped_spans_total is %v, was %v before the receiver was killed", after, before)
		}
		return nil
	})
}

// TestTracesOfStart runs `gcp start --tracing-config-file` against an
// OTLP receiver of its own process: the trace of a create holds the API
// server's span and the in-process etcd clients' spans; with the
// receiver SIGKILLed, requests succeed and dropped spans are counted.
func TestTracesOfStart(t *testing.T) {
	t.Parallel()
	r := startOTLPReceiver(t)
	a := startAllInOne(t, t.TempDir(), "--tracing-config-file", tracingConfig(t, r.address))
	testTracing(t, a, r)
}

// TestTracesOfSplitAPIServer is TestTracesOfStart for `gcp apiserver`
// against a `gcp etcd` member, whose etcd clients are gRPC clients
// traced by otelgrpc.
func TestTracesOfSplitAPIServer(t *testing.T) {
	t.Parallel()
	r := startOTLPReceiver(t)
	c := newEtcdCluster(t, 1)
	a := &allInOne{t: t, binary: gcpBinary, dataDir: c.base}
	server := c.startAPIServerOn(a, c.etcdURLs, "--tracing-config-file", tracingConfig(t, r.address))
	mustGCP(t, "kubectl", "--kubeconfig", a.kubeconfig(), "config", "set-cluster", "gcp", "--server", server)
	testTracing(t, a, r)
}

// TestBadTracingConfigIsOneLine: a tracing configuration that does not
// parse or validate stops `gcp start` in one line naming the file and
// the field, exit 1, nothing on disk.
func TestBadTracingConfigIsOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"+content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct{ file, want string }{
		{write("rate.yaml", "samplingRatePerMillion: 2000000\n"), "samplingRatePerMillion: Invalid value"},
		{write("type.yaml", "samplingRatePerMillion: all\n"), "samplingRatePerMillion"},
		{write("unknown.yaml", "sampleRate: 5\n"), "sampleRate"},
		{write("endpoint.yaml", "endpoint: https://collector:4317\n"), "endpoint: Invalid value"},
		{write("malformed.yaml", "endpoint: [\n"), "malformed.yaml"},
		{filepath.Join(dir, "missing.yaml"), "missing.yaml"},
	} {
		wantStartRefused(t, tc.want, "--tracing-config-file", tc.file)
		wantStartRefused(t, tc.file, "--tracing-config-file", tc.file)
	}
}
