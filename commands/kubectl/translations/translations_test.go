package translations

import "testing"

func TestRunsKubectl(t *testing.T) {
	for args, want := range map[*[]string]bool{
		{"/usr/local/bin/gcp", "kubectl", "get", "ns"}: true,
		{"/usr/local/bin/kubectl", "get", "ns"}:        true,
		{"widgets-kubectl"}:                            true,
		{"gcp", "start"}:                               false,
		{"gcp-apiserver"}:                              false,
		{}:                                             false,
	} {
		if got := runsKubectl(*args); got != want {
			t.Errorf("runsKubectl(%q) = %v, want %v", *args, got, want)
		}
	}
}
