package testserver

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// logHelperEnv makes TestLogHelper run, in a child test binary.
const logHelperEnv = "GCP_TESTSERVER_LOG_HELPER"

// TestLogHelper is run by TestQuietByDefault in a child process: it starts
// a server, uses it, and fails if asked to.
func TestLogHelper(t *testing.T) {
	mode := os.Getenv(logHelperEnv)
	if mode == "" {
		t.Skip("run by TestQuietByDefault")
	}
	s := Start(t, Options{})
	if _, err := s.Client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if mode == "fail" {
		t.Error("failing on purpose")
	}
}

// TestQuietByDefault: a test binary whose test starts, uses and stops a
// server prints nothing of the server's (it printed about 120 lines, an
// etcd error with a stack trace among them); when the test fails, the
// server's log is printed with it.
func TestQuietByDefault(t *testing.T) {
	t.Parallel()
	run := func(mode string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestLogHelper$", "-test.count", "1")
		cmd.Env = append(os.Environ(), logHelperEnv+"="+mode)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("pass")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		// go test -cover adds its line.
		if l != "PASS" && !strings.HasPrefix(l, "coverage:") {
			lines = append(lines, l)
		}
	}
	if err != nil || len(lines) > 0 {
		t.Fatalf("a passing test printed more than PASS (err %v):\n%s", err, out)
	}
	out, err = run("fail")
	if err == nil || !strings.Contains(out, "test server log:") || !strings.Contains(out, "Serving securely on 127.0.0.1:") {
		t.Fatalf("a failing test did not print the server's log (err %v):\n%s", err, out)
	}
}

// TestLogOutput: a server with LogOutput writes its log there as it
// comes.
func TestLogOutput(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var buf bytes.Buffer
	s := Start(t, Options{LogOutput: lockedWriter{&mu, &buf}})
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "Serving securely on " + u.Host; !strings.Contains(buf.String(), want) {
		t.Errorf("LogOutput has no %q:\n%s", want, buf.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
