package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		Deps:     []*debug.Module{{Path: "k8s.io/api", Version: "v0.1.0"}, {Path: "k8s.io/apiserver", Version: "v0.37.2"}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}},
	}
	got := fromBuildInfo(bi)
	if got.GitVersion != "v1.37.2" || got.Major != "1" || got.Minor != "37" {
		t.Fatalf("got %+v, want v1.37.2 major 1 minor 37", got)
	}
	if got.GitCommit != "abc" || got.GitTreeState != "clean" {
		t.Fatalf("vcs settings not used: %+v", got)
	}
}

func TestFallbackWithoutBuildInfo(t *testing.T) {
	if got := fromBuildInfo(nil); got.GitVersion != "v1.37.2" {
		t.Fatalf("got %q, want v1.37.2", got.GitVersion)
	}
}

func TestGetIsTheLibraryVersion(t *testing.T) {
	// A test binary carries the module's build info, so Get reports the
	// k8s.io/apiserver requirement from go.mod.
	if got := Get(); got.GitVersion != "v1.37.2" {
		t.Fatalf("Get().GitVersion = %q, want v1.37.2 (go.mod pins k8s.io/apiserver v0.37.2)", got.GitVersion)
	}
}
