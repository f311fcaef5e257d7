package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// jsonRecords checks that every line of out is a JSON record of klog's
// JSON format (ts and msg; v for info records) and returns them.
func jsonRecords(t *testing.T, what, out string) []map[string]any {
	t.Helper()
	var records []map[string]any
	for i, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Errorf("%s: line %d is not JSON (%v): %s", what, i+1, err, line)
			continue
		}
		if r["ts"] == nil || r["msg"] == nil {
			t.Errorf("%s: line %d lacks klog's JSON keys (ts, msg): %s", what, i+1, line)
		}
		records = append(records, r)
	}
	return records
}

// waitLogged waits, up to 30 s, until a's log holds text: kubectl may see
// /readyz before gcp's own readiness wait says the control plane is ready.
func (a *allInOne) waitLogged(text string) {
	_ = poll.Wait(context.Background(), 20*time.Millisecond, 30*time.Second, func() error {
		if !strings.Contains(a.log.String(), text) {
			return errors.New("not logged yet")
		}
		return nil
	})
}

// TestStartJSONLogs: `gcp start --logging-format=json` writes only JSON
// records, the embedded etcd's among them (-v=2 makes etcd's info lines
// show), from its first line to the last after SIGTERM.
func TestStartJSONLogs(t *testing.T) {
	t.Parallel()
	a := startAllInOne(t, t.TempDir(), "--logging-format=json", "-v=2")
	a.waitLogged("Control plane is ready")
	a.kubectl("create", "namespace", "json-logs")
	if err := a.stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, a.log)
	}
	records := jsonRecords(t, "gcp start --logging-format=json", a.log.String())
	var etcd, ready int
	for _, r := range records {
		if r["logger"] == "etcd" {
			etcd++
			if r["v"] != float64(2) && r["v"] != float64(0) && r["err"] == nil {
				t.Errorf("etcd record at an unexpected verbosity: %v", r)
			}
		}
		if r["msg"] == "Control plane is ready" && r["url"] != nil {
			ready++
		}
	}
	if etcd == 0 {
		t.Errorf("no record of the embedded etcd (logger etcd) at -v=2")
	}
	if ready != 1 {
		t.Errorf("%d records say the control plane is ready, want 1", ready)
	}
	for _, never := range []string{"missing term information", "stacktrace"} {
		if strings.Contains(a.log.String(), never) {
			t.Errorf("the log has %q", never)
		}
	}
}

// maxStartLines bounds what `gcp start` writes at the default verbosity
// until it is ready: what it does (data dir, etcd ready, serving on, admin
// kubeconfig, ready), with room for a warning or two.
const maxStartLines = 15

// stackTraceLine is a line of a Go stack trace or of zap's, as etcd wrote
// one on a first start.
var stackTraceLine = regexp.MustCompile(`^\s+\S+\.go:\d+|^goroutine \d+ \[|"stacktrace"`)

// TestDefaultStartIsShort: at the default verbosity a first start, and a
// second in the same data dir, say what they do in a few lines, without
// upstream's start-up chatter, and with no stack trace, ever.
func TestDefaultStartIsShort(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	for _, run := range []string{"first", "second"} {
		a := startAllInOne(t, dataDir)
		a.waitLogged("Control plane is ready")
		if err := a.stop(); err != nil {
			t.Fatalf("%s start: stop: %v\n%s", run, err, a.log)
		}
		out := a.log.String()
		before, _, ok := strings.Cut(out, "Control plane is ready")
		if !ok {
			t.Fatalf("%s start never said it is ready:\n%s", run, out)
		}
		if n := strings.Count(before, "\n"); n > maxStartLines {
			t.Errorf("%s start wrote %d lines before ready, want at most %d:\n%s", run, n, maxStartLines, before)
		}
		for _, want := range []string{dataDir, "etcd is ready", "is serving on https://", "admin kubeconfig: " + filepath.Join(dataDir, "admin.kubeconfig")} {
			if !strings.Contains(before, want) {
				t.Errorf("%s start does not say %q before ready:\n%s", run, want, before)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if stackTraceLine.MatchString(line) || strings.Contains(line, "missing term information") {
				t.Errorf("%s start wrote a stack trace or etcd's storage version error: %s\n%s", run, line, out)
				break
			}
		}
	}
}

// TestUnknownLoggingFormat: an unknown --logging-format is one line naming
// the formats, exit 1, for each server command, and gcp start leaves no
// data dir.
func TestUnknownLoggingFormat(t *testing.T) {
	t.Parallel()
	wantStartRefused(t, "text, json", "--logging-format", "xml")
	for _, cmd := range []string{"apiserver", "controllers", "etcd"} {
		out, code := runGCP(t, cmd, "--logging-format", "xml")
		if code != 1 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "xml") || !strings.Contains(out, "is not one of: text, json") {
			t.Errorf("gcp %s --logging-format xml: exit %d, want 1 and one line naming the formats:\n%s", cmd, code, out)
		}
	}
}

// TestEtcdJSONLogs: `gcp etcd --logging-format=json` writes only JSON
// records, etcd's own included, until it stops.
func TestEtcdJSONLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProcess(t, "etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", "unix://"+filepath.Join(dir, "etcd.sock"),
		"--logging-format=json", "-v=2")
	poll.Until(t, 100*time.Millisecond, 60*time.Second, func() error {
		if strings.Contains(p.log.String(), `"msg":"etcd is serving"`) {
			return nil
		}
		select {
		case <-p.done:
			t.Fatalf("gcp etcd exited before serving:\n%s", p.log)
		default:
		}
		return fmt.Errorf("gcp etcd not serving:\n%s", p.log)
	})
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("gcp etcd did not stop within 30s of SIGTERM:\n%s", p.log)
	}
	etcd := 0
	for _, r := range jsonRecords(t, "gcp etcd --logging-format=json", p.log.String()) {
		if r["logger"] == "etcd" {
			etcd++
		}
	}
	if etcd == 0 {
		t.Errorf("no record of etcd itself (logger etcd) at -v=2:\n%s", p.log)
	}
}
