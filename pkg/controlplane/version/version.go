// Package version reports the Kubernetes version gcp implements: the one of
// the k8s.io libraries it is built on (k8s.io/apiserver v0.X.Y is
// Kubernetes v1.X.Y). It is read from the binary's build info, so a plain
// `go build` or `go run` reports it without -ldflags.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// libraryModule is the module whose version names the Kubernetes release.
const libraryModule = "k8s.io/apiserver"

// fallback is used when the binary carries no build info for libraryModule
// (never for a module build; kept so the server always reports a version).
const fallback = "v0.37.2"

// Get returns the version info served at /version and printed by `gcp version`.
func Get() apimachineryversion.Info {
	info, _ := debug.ReadBuildInfo()
	return fromBuildInfo(info)
}

func fromBuildInfo(bi *debug.BuildInfo) apimachineryversion.Info {
	libVersion := fallback
	var commit, date, treeState string
	if bi != nil {
		for _, dep := range bi.Deps {
			if dep.Path == libraryModule {
				libVersion = dep.Version
				if dep.Replace != nil && dep.Replace.Version != "" {
					libVersion = dep.Replace.Version
				}
			}
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				date = s.Value
			case "vcs.modified":
				treeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
			}
		}
	}
	gitVersion, major, minor := kubeVersion(libVersion)
	return apimachineryversion.Info{
		Major:        major,
		Minor:        minor,
		GitVersion:   gitVersion,
		GitCommit:    commit,
		GitTreeState: treeState,
		BuildDate:    date,
		GoVersion:    runtime.Version(),
		Compiler:     runtime.Compiler,
		Platform:     fmt.Sprintf("%s/%s", runtime.GOOS, runtime.GOARCH),
	}
}

// kubeVersion maps a library module version v0.X.Y[-pre] to v1.X.Y[-pre].
func kubeVersion(lib string) (gitVersion, major, minor string) {
	parts := strings.SplitN(strings.TrimPrefix(lib, "v"), ".", 3)
	if len(parts) != 3 || parts[0] != "0" {
		return lib, "", ""
	}
	return "v1." + parts[1] + "." + parts[2], "1", parts[1]
}
