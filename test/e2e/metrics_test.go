package e2e

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protodelim"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// protobufMetrics is the Accept header Prometheus sends to scrape native
// histograms: the text format has no way to write them.
const protobufMetrics = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// scrapeProtobuf gets kubeconfig's server's /metrics in the delimited
// protobuf exposition, family by name.
func scrapeProtobuf(t *testing.T, kubeconfig string) map[string]*dto.MetricFamily {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, cfg.Host+"/metrics", nil)
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
		t.Fatalf("GET /metrics: %s", resp.Status)
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
			native, classic := nativeHistograms(scrapeProtobuf(t, a.kubeconfig()))
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
