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
