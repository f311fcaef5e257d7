package etcd

import (
	"slices"
	"testing"
)

func TestEndpointsExcept(t *testing.T) {
	all := []string{"https://127.0.0.1:2379", "https://127.0.0.1:2479/", "https://127.0.0.1:2579"}
	for _, tc := range []struct {
		name       string
		memberURLs []string
		want       []string
	}{
		{"the member's URL goes", []string{"https://127.0.0.1:2379"}, all[1:]},
		{"a trailing slash on either side does not matter", []string{"https://127.0.0.1:2479"}, []string{all[0], all[2]}},
		{"a member reached by another name stays", []string{"https://node0:2379"}, all},
		{"a member of several URLs", []string{"https://127.0.0.1:2379/", "https://127.0.0.1:2579"}, []string{all[1]}},
	} {
		if got := endpointsExcept(all, tc.memberURLs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestFlagsAsTyped: the connection flags printed for the next command are
// the ones given, quoted where a shell would split or expand them.
func TestFlagsAsTyped(t *testing.T) {
	o := &clientOptions{servers: []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"}, caFile: "/etc/gcp/pki/etcd/ca.crt",
		cert: "/etc/gcp/my pki/client.crt", key: "/etc/gcp/it's.key"}
	want := `--etcd-servers https://10.0.0.1:2379,https://10.0.0.2:2379 --etcd-cafile /etc/gcp/pki/etcd/ca.crt ` +
		`--etcd-certfile '/etc/gcp/my pki/client.crt' --etcd-keyfile '/etc/gcp/it'\''s.key'`
	if got := o.flags(o.servers); got != want {
		t.Errorf("flags:\n got %s\nwant %s", got, want)
	}
	if got := (&clientOptions{}).flags([]string{"unix:///var/lib/gcp/etcd.sock"}); got != "--etcd-servers unix:///var/lib/gcp/etcd.sock" {
		t.Errorf("flags without TLS: %s", got)
	}
}
