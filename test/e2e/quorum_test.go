package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcp-project/gcp/test/poll"
)

// quorumAnswerBound is how long a request may take to be answered while
// etcd has no quorum: the API server's own bound is a few seconds
// (docs/deploy.md); this leaves room for two busy cores.
const quorumAnswerBound = 10 * time.Second

// TestEtcdQuorumLoss SIGKILLs two of three `gcp etcd` members under one
// `gcp apiserver`: a create, a GET, a LIST and a watch that sends its
// initial events are each answered within quorumAnswerBound with 503 (and
// Retry-After) or 504 and a message naming etcd, never a reset stream or a
// 500 (a watch from "now" is the watch cache's to serve: it may open, or
// get the cache's 429 while the cache cannot reinitialize from etcd);
// /livez stays 200 (the process is healthy, and restarting it would not
// bring etcd back) while /readyz fails naming etcd; with the members back,
// writes succeed again without restarting the API server.
func TestEtcdQuorumLoss(t *testing.T) {
	t.Parallel()
	c := newHACluster(t)
	a := &allInOne{t: t, binary: gcpBinary, dataDir: c.base}
	server := c.startAPIServer(a)
	cfg, err := clientcmd.BuildConfigFromFlags(server, a.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	// client-go's own transport: HTTP/2, where a handler that gives up
	// shows as a reset stream.
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	httpClient.Timeout = 2 * quorumAnswerBound
	do := func(method, path, body string) (int, http.Header, string, time.Duration, error) {
		req, err := http.NewRequest(method, server+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := httpClient.Do(req)
		took := time.Since(start)
		if err != nil {
			return 0, nil, "", took, err
		}
		defer resp.Body.Close()
		if req.URL.Query().Get("watch") != "" && resp.StatusCode == http.StatusOK {
			if req.URL.Query().Get("sendInitialEvents") == "" {
				return resp.StatusCode, resp.Header, "", took, nil // a watch from now: its headers are the answer
			}
			// The first event is the answer: an object, or an error.
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			return resp.StatusCode, resp.Header, line, time.Since(start), err
		}
		data, err := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(data), took, err
	}
	configMap := func(name string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"k":"v"}}`, name)
	}
	const cms = "/api/v1/namespaces/default/configmaps"
	if code, _, body, _, err := do("POST", cms, configMap("before")); err != nil || code != http.StatusCreated {
		t.Fatalf("create with quorum: %d %s %v", code, body, err)
	}

	leader := c.leader()
	down := []int{leader, (leader + 1) % 3}
	for _, i := range down {
		_ = c.members[i].proc.cmd.Process.Kill()
		<-c.members[i].proc.done
	}

	for _, r := range []struct {
		what, method, path, body string
		fromCache                bool // may be served from the watch cache
	}{
		{what: "create", method: "POST", path: cms, body: configMap("no-quorum")},
		{what: "get", method: "GET", path: cms + "/before"},
		{what: "list", method: "GET", path: cms},
		{what: "watch with initial events", method: "GET", path: cms + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"},
		{what: "watch from now", method: "GET", path: cms + "?watch=1", fromCache: true},
	} {
		code, header, body, took, err := do(r.method, r.path, r.body)
		t.Logf("%s without quorum: %d after %v, Retry-After %q: %s", r.what, code, took.Round(time.Millisecond), header.Get("Retry-After"), strings.TrimSpace(body))
		switch {
		case err != nil:
			t.Errorf("%s without quorum: no answer after %v: %v", r.what, took, err)
		case took > quorumAnswerBound:
			t.Errorf("%s without quorum: answered after %v, more than %v", r.what, took, quorumAnswerBound)
		}
		if err != nil || (r.fromCache && code == http.StatusOK) {
			continue
		}
		retryAfter := header.Get("Retry-After")
		if code == http.StatusOK && strings.Contains(r.path, "watch=1") {
			// An error after the watch began comes as its first event.
			var event struct {
				Type   string
				Object metav1.Status
			}
			if err := json.Unmarshal([]byte(body), &event); err != nil || event.Type != "ERROR" {
				t.Errorf("%s without quorum: 200 and a first event that is not an error: %s", r.what, body)
				continue
			}
			code = int(event.Object.Code)
			if d := event.Object.Details; d != nil && d.RetryAfterSeconds > 0 {
				retryAfter = strconv.Itoa(int(d.RetryAfterSeconds))
			}
		}
		switch {
		case code == http.StatusServiceUnavailable,
			// The watch cache's own answer while it cannot
			// (re)initialize from etcd.
			code == http.StatusTooManyRequests && r.fromCache:
			if retryAfter == "" {
				t.Errorf("%s without quorum: %d without Retry-After", r.what, code)
			}
		case code == http.StatusGatewayTimeout:
		default:
			t.Errorf("%s without quorum: %d, want 503 or 504: %s", r.what, code, body)
		}
		if !strings.Contains(body, "etcd") {
			t.Errorf("%s without quorum: the answer does not name etcd: %s", r.what, body)
		}
	}

	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		code, _, body, _, err := do("GET", "/readyz?verbose", "")
		if err != nil || code == http.StatusOK || !strings.Contains(body, "[-]etcd") {
			return fmt.Errorf("readyz without quorum: %d %v\n%s", code, err, body)
		}
		t.Logf("readyz without quorum: %d\n%s", code, body)
		return nil
	})
	// The surviving member knows by now that it has no leader: a write is
	// refused before it is proposed, so the answer is a 503 to retry at
	// will, not a 504 that leaves the write in doubt.
	code, header, body, took, err := do("POST", cms, configMap("no-leader"))
	t.Logf("create once the member knows it has no leader: %d after %v: %s", code, took.Round(time.Millisecond), strings.TrimSpace(body))
	if err != nil || code != http.StatusServiceUnavailable || header.Get("Retry-After") == "" || !strings.Contains(body, "etcd has no leader") {
		t.Errorf("create once the member knows it has no leader: %d %v, Retry-After %q: %s", code, err, header.Get("Retry-After"), body)
	}
	// The liveness check runs after the readiness check has failed, long
	// enough for etcd's own health check to have timed out.
	if code, _, body, _, err := do("GET", "/livez?verbose", ""); err != nil || code != http.StatusOK {
		t.Errorf("livez without quorum: %d %v\n%s", code, err, body)
	}

	for _, i := range down {
		c.startMember(i)
	}
	for _, i := range down {
		c.waitMember(i)
	}
	poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
		if code, _, body, _, err := do("POST", cms, configMap("quorum-back")); err != nil || code != http.StatusCreated {
			return fmt.Errorf("create with quorum back: %d %v %s", code, err, body)
		}
		return nil
	})
	if code, _, body, _, err := do("GET", cms+"/before", ""); err != nil || code != http.StatusOK {
		t.Errorf("get with quorum back: %d %v %s", code, err, body)
	}
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		if code, _, body, _, err := do("GET", "/readyz", ""); err != nil || code != http.StatusOK {
			return fmt.Errorf("readyz with quorum back: %d %v %s", code, err, body)
		}
		return nil
	})
}
