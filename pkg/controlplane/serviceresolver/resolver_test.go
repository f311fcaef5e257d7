package serviceresolver

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestResolveEndpoint(t *testing.T) {
	client := fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ConfigMapName},
		Data: map[string]string{
			"api.wardle.443":  "127.0.0.1:9443",
			"v6.wardle.443":   "[::1]:9443",
			"bad.wardle.443":  "127.0.0.1",
			"port.wardle.443": "127.0.0.1:99999",
		},
	})
	r := New(client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.Start(ctx)
	r.lookupHost = func(_ context.Context, host string) ([]string, error) {
		if host == "dns.wardle.svc" {
			return []string{"10.0.0.1"}, nil
		}
		return nil, errors.New("no such host")
	}

	for _, c := range []struct {
		name    string
		port    int32
		want    string
		wantErr string
	}{
		{"api", 443, "https://127.0.0.1:9443", ""},
		{"v6", 443, "https://[::1]:9443", ""},
		{"dns", 8443, "https://dns.wardle.svc:8443", ""},
		{"api", 8443, "", "add key api.wardle.8443 (value host:port) to ConfigMap kube-system/service-addresses"},
		{"bad", 443, "", `key bad.wardle.443 is "127.0.0.1", want host:port`},
		{"port", 443, "", `"99999" is not a port`},
	} {
		u, err := r.ResolveEndpoint("wardle", c.name, c.port)
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s:%d: got %v, %v; want error containing %q", c.name, c.port, u, err, c.wantErr)
		case c.wantErr == "" && (err != nil || u.String() != c.want):
			t.Errorf("%s:%d: got %v, %v; want %s", c.name, c.port, u, err, c.want)
		}
	}

	for _, c := range []struct {
		name string
		want bool
	}{{"api", true}, {"dns", true}, {"nowhere", false}} {
		if got := r.HasService("wardle", c.name); got != c.want {
			t.Errorf("HasService(wardle, %s) = %v, want %v", c.name, got, c.want)
		}
	}

	// Without the core group there is nothing to read: DNS only.
	dnsOnly := New(nil)
	dnsOnly.Start(ctx)
	dnsOnly.lookupHost = r.lookupHost
	if u, err := dnsOnly.ResolveEndpoint("wardle", "dns", 443); err != nil || u.Host != "dns.wardle.svc:443" {
		t.Errorf("DNS-only resolver: %v %v", u, err)
	}
}
