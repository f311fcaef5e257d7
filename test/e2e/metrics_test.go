package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protodelim"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/gcp-project/gcp/test/poll"
)

// protobufMetrics is the Accept header Prometheus sends to scrape native
// histograms: the text format has no way to write them.
const protobufMetrics = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// kubeconfigClient returns an HTTP client for kubeconfig's user and its
// server's URL.
func kubeconfigClient(t *testing.T, kubeconfig string) (*http.Client, string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, cfg.Host
}

// adminClient is a client with the data dir's admin certificate that
// trusts any server: `gcp controllers`' serving certificate is self-signed.
func adminClient(t *testing.T, dataDir string) *http.Client {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(dataDir, "pki", "admin.crt"), filepath.Join(dataDir, "pki", "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: true, // the controllers' self-signed serving certificate
	}}}
}

// scrapeProtobuf gets server's /metrics in the delimited protobuf
// exposition, family by name.
func scrapeProtobuf(t *testing.T, client *http.Client, server string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, server+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", protobufMetrics)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics: %s", server, resp.Status)
	}
	families := map[string]*dto.MetricFamily{}
	r := bufio.NewReader(resp.Body)
	for {
		f := &dto.MetricFamily{}
		if err := protodelim.UnmarshalFrom(r, f); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("/metrics (%s) is not delimited protobuf: %v", resp.Header.Get("Content-Type"), err)
		}
		families[f.GetName()] = f
	}
	return families
}

// nativeHistograms names the families with a native histogram (a schema)
// and says whether apiserver_request_duration_seconds has classic buckets.
func nativeHistograms(families map[string]*dto.MetricFamily) (native []string, classic bool) {
	for name, f := range families {
		hasNative := false
		for _, m := range f.Metric {
			if h := m.GetHistogram(); h != nil && h.Schema != nil {
				hasNative = true
			}
			if name == "apiserver_request_duration_seconds" && len(m.GetHistogram().GetBucket()) > 0 {
				classic = true
			}
		}
		if hasNative {
			native = append(native, name)
		}
	}
	return native, classic
}

// TestNativeHistograms: with the NativeHistograms feature gate (beta and on
// by default in 1.37, as in kube-apiserver), the protobuf exposition has
// native histograms beside the classic buckets; with it off, classic ones
// only.
func TestNativeHistograms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		flags  []string
		native bool
	}{
		{"default", nil, true},
		{"off", []string{"--feature-gates=NativeHistograms=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := startAllInOne(t, filepath.Join(t.TempDir(), "data"), tc.flags...)
			a.kubectl("create", "configmap", "c", "--from-literal=a=b")
			client, server := kubeconfigClient(t, a.kubeconfig())
			native, classic := nativeHistograms(scrapeProtobuf(t, client, server))
			if !classic {
				t.Error("apiserver_request_duration_seconds has no classic buckets")
			}
			hasRequestDuration := false
			for _, name := range native {
				hasRequestDuration = hasRequestDuration || name == "apiserver_request_duration_seconds"
			}
			if tc.native && !hasRequestDuration {
				t.Errorf("apiserver_request_duration_seconds is not a native histogram; native ones: %v", native)
			}
			if !tc.native && len(native) > 0 {
				t.Errorf("native histograms with NativeHistograms=false: %v", native)
			}
		})
	}
}

// TestControllersNativeHistograms: `gcp controllers` takes
// --feature-gates, as kube-controller-manager does, and applies the
// NativeHistograms gate (on by default in 1.37): its work queues'
// histograms are native by default and classic only with the gate off,
// and it serves the gates and its version as kube-controller-manager does.
func TestControllersNativeHistograms(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	startAllInOne(t, dataDir)
	client := adminClient(t, dataDir)
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("NativeHistograms=%t", on), func(t *testing.T) {
			t.Parallel()
			port := freePort(t)
			startProcess(t, "controllers", "--kubeconfig", filepath.Join(dataDir, "controllers.kubeconfig"), "--secure-port", fmt.Sprint(port),
				"--cert-dir", t.TempDir(), "--leader-elect-resource-name", fmt.Sprintf("e2e-native-%t", on),
				fmt.Sprintf("--feature-gates=NativeHistograms=%t", on))
			server := fmt.Sprintf("https://127.0.0.1:%d", port)
			// The work queues' histograms have series once the controllers
			// lead and work.
			var families map[string]*dto.MetricFamily
			poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
				// /metrics is authorized by delegation: 403 for a client
				// certificate until the controllers have read the client CA.
				if resp, err := client.Get(server + "/metrics"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						families = scrapeProtobuf(t, client, server)
						if families["workqueue_work_duration_seconds"] != nil && families["leader_election_master_status"] != nil {
							return nil
						}
					}
				}
				return errors.New("gcp controllers not ready and working")
			})
			native, _ := nativeHistograms(families)
			found := slices.Contains(native, "workqueue_work_duration_seconds")
			if found != on {
				t.Errorf("workqueue_work_duration_seconds native: %t, want %t; native ones: %v", found, on, native)
			}
			if !on && len(native) > 0 {
				t.Errorf("native histograms with NativeHistograms=false: %v", native)
			}
			if !gateServed(families, "NativeHistograms", on) {
				t.Errorf("kubernetes_feature_enabled{name=\"NativeHistograms\"} is not %t", on)
			}
			if families["version_info"] == nil {
				t.Error("gcp controllers serves no version_info")
			}
		})
	}
}

// gateServed says whether kubernetes_feature_enabled has a series for the
// gate name with the value on.
func gateServed(families map[string]*dto.MetricFamily, name string, on bool) bool {
	want := 0.0
	if on {
		want = 1
	}
	for _, m := range families["kubernetes_feature_enabled"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" && l.GetValue() == name {
				return m.GetGauge().GetValue() == want
			}
		}
	}
	return false
}

// servedOnEvent are families the alert rules of docs/operations.md name
// that have no series until what they alert on happens, and the test that
// sees them then.
var servedOnEvent = map[string]string{
	"etcd_debugging_server_alarms": "TestNoSpaceRecovery", // a series per raised alarm
}

// TestAlertRuleMetricsExist: every metric the example alert rules of
// docs/operations.md name is served by `gcp start` or `gcp controllers`, so
// the rules do not silently never fire.
func TestAlertRuleMetricsExist(t *testing.T) {
	t.Parallel()
	rules := docAlertRules(t)
	dataDir := t.TempDir()
	a := startAllInOne(t, dataDir)
	port := freePort(t)
	startProcess(t, "controllers", "--kubeconfig", filepath.Join(dataDir, "controllers.kubeconfig"), "--secure-port", fmt.Sprint(port),
		"--cert-dir", t.TempDir(), "--leader-elect-resource-name", "e2e-alerts")

	served := metricFamilies(a.kubectl("get", "--raw", "/metrics"))
	if len(served) == 0 {
		t.Fatal("gcp start's /metrics has no families")
	}
	// The controllers' leader-election gauge is served once they lead.
	client := adminClient(t, dataDir)
	var controllers map[string]bool
	poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
		if resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", port)); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				controllers = metricFamilies(string(body))
			}
		}
		if !controllers["leader_election_master_status"] {
			return fmt.Errorf("gcp controllers' /metrics has no leader_election_master_status: %d families", len(controllers))
		}
		return nil
	})
	for name := range controllers {
		served[name] = true
	}

	for _, r := range rules {
		names := promQLMetricNames(r.Expr)
		if len(names) == 0 {
			t.Errorf("alert %s: no metric found in %q", r.Alert, r.Expr)
		}
		for _, name := range names {
			family := name
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if base := strings.TrimSuffix(name, suffix); base != name && served[base] {
					family = base
				}
			}
			if !served[family] && servedOnEvent[family] == "" {
				t.Errorf("alert %s names %s, which neither gcp start nor gcp controllers serves", r.Alert, name)
			}
		}
	}
}

// alertRule is one rule of a Prometheus rule file.
type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// docAlertRules returns the rules of the Prometheus rule file in
// docs/operations.md: the yaml block that starts with "groups:".
func docAlertRules(t *testing.T) []alertRule {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	const start = "```yaml\ngroups:\n"
	i := strings.Index(string(doc), start)
	if i < 0 {
		t.Fatalf("docs/operations.md has no %q block", start)
	}
	block := string(doc[i+len("```yaml\n"):])
	block = block[:strings.Index(block, "\n```")]
	var file struct {
		Groups []struct {
			Name  string      `json:"name"`
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict([]byte(block), &file, func(d *json.Decoder) *json.Decoder { return d }); err != nil {
		t.Fatalf("docs/operations.md's alert rules: %v", err)
	}
	var rules []alertRule
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" {
				t.Errorf("group %s: a rule without alert or expr: %+v", g.Name, r)
			}
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 {
		t.Fatal("docs/operations.md's alert rules are empty")
	}
	return rules
}

// metricFamilies returns the families of a text exposition.
func metricFamilies(exposition string) map[string]bool {
	families := map[string]bool{}
	for _, line := range strings.Split(exposition, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			families[f[2]] = true
		}
	}
	return families
}

var (
	promQLStrings   = regexp.MustCompile(`"(\\.|[^"\\])*"`)
	promQLMatchers  = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promQLGrouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|\boffset\s+-?[0-9a-z]+`)
	promQLName      = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promQLOperators = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true,
		"without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
)

// promQLMetricNames returns the metric names of a PromQL expression: the
// identifiers left once strings, label matchers, ranges and grouping
// clauses and offsets are gone that are neither functions (followed by a parenthesis)
// nor keywords. (github.com/prometheus/prometheus' parser is not in gcp's
// module graph, and this is all the test needs.)
func promQLMetricNames(expr string) []string {
	expr = promQLStrings.ReplaceAllString(expr, `""`)
	expr = promQLMatchers.ReplaceAllString(expr, " ")
	expr = promQLGrouping.ReplaceAllString(expr, " ")
	var names []string
	for _, m := range promQLName.FindAllStringSubmatch(expr, -1) {
		if m[1] != "" || promQLOperators[strings.ToLower(m[0])] {
			continue
		}
		names = append(names, m[0])
	}
	return names
}

// TestPromQLMetricNames: the alert test's extraction finds metrics, not
// functions, keywords, labels or durations.
func TestPromQLMetricNames(t *testing.T) {
	t.Parallel()
	expr := `apiserver_client_certificate_expiration_seconds_count > 0
	  and on (instance) histogram_quantile(0.01, sum by (instance, le)
	    (rate(apiserver_client_certificate_expiration_seconds_bucket{job="a,b}", le!="x"}[5m]))) < 7 * 86400
	  or max without (code) (up offset 5m) / time()`
	got := strings.Join(promQLMetricNames(expr), " ")
	want := "apiserver_client_certificate_expiration_seconds_count apiserver_client_certificate_expiration_seconds_bucket up"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
