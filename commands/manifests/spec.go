package manifests

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// spec is what a unit file or a static pod is made from: one role, the
// flags it was given, the host paths they name and where to probe it.
type spec struct {
	// product is the binary the manifest runs, as main's root command is
	// called.
	product string
	role    string
	r       role
	// args are the role's flags as --name=value, in the order given, so
	// that the process parses them exactly as the command line would.
	args []string
	// paths are the host directories the role reads or writes.
	paths []hostPath
	probe *probe
}

// hostPath is a directory on the host a role needs.
type hostPath struct {
	dir      string
	writable bool
	// optional says the role starts without it: a static pod mounts it as
	// DirectoryOrCreate, so a host without it gets an empty directory.
	optional bool
}

// setting is one flag as given: its name and the value passed to Set.
type setting struct{ name, value string }

// recorder is a flag value that remembers every value set through it, so
// a manifest repeats the flags as given (slices, maps and repeated flags
// included) instead of rendering parsed values back to text.
type recorder struct {
	pflag.Value
	name string
	log  *[]setting
}

func (r *recorder) Set(v string) error {
	if err := r.Value.Set(v); err != nil {
		return err
	}
	*r.log = append(*r.log, setting{r.name, v})
	return nil
}

// IsBoolFlag keeps --flag without a value working for boolean flags.
func (r *recorder) IsBoolFlag() bool {
	b, ok := r.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// record makes every flag of fs remember what it is set to in log.
func record(fs *pflag.FlagSet, log *[]setting) {
	fs.VisitAll(func(f *pflag.Flag) {
		f.Value = &recorder{Value: f.Value, name: f.Name, log: log}
	})
}

// pathKind says whether a flag names files or directories on the host,
// and which of them the role writes.
type pathKind int

const (
	notPath pathKind = iota
	readFile
	writeDir  // a directory the role writes in (a data dir)
	writeFile // a file the role creates (a log, a socket)
	socketURLs
)

// configFlags name files though their names do not end like a path's.
var configFlags = map[string]bool{
	"encryption-provider-config": true,
	"authentication-config":      true,
	"authorization-config":       true,
	"leader-migration-config":    true,
	"tls-sni-cert-key":           true,
}

func kindOf(name string) pathKind {
	switch {
	case name == "data-dir" || name == "cert-dir":
		return writeDir
	case name == "audit-log-path" || name == "debug-socket-path":
		return writeFile
	case name == "etcd-servers" || strings.HasSuffix(name, "-urls"):
		return socketURLs
	case strings.HasSuffix(name, "file") || strings.HasSuffix(name, "kubeconfig") || strings.HasSuffix(name, "-dir") ||
		strings.HasSuffix(name, "-path") || configFlags[name]:
		return readFile
	}
	return notPath
}

// hostPaths returns the directories the settings name, each once, outer
// directories covering inner ones of the same access; a relative path is
// an error, since a unit or a pod runs in a working directory of its own.
func hostPaths(settings []setting) ([]hostPath, error) {
	dirs := map[string]bool{} // dir → writable
	add := func(dir string, writable bool) {
		dirs[dir] = dirs[dir] || writable
	}
	for _, s := range settings {
		kind := kindOf(s.name)
		if kind == notPath || s.value == "" {
			continue
		}
		var paths []string
		switch {
		case kind == socketURLs:
			for _, raw := range strings.Split(s.value, ",") {
				if u, err := url.Parse(raw); err == nil && (u.Scheme == "unix" || u.Scheme == "unixs") {
					paths = append(paths, u.Host+u.Path)
				}
			}
		case s.name == "tls-sni-cert-key":
			certKey, _, _ := strings.Cut(s.value, ":")
			paths = strings.Split(certKey, ",")
		case s.name == "audit-log-path" && s.value == "-":
			continue
		default:
			paths = strings.Split(s.value, ",")
		}
		for _, p := range paths {
			p = strings.TrimSpace(p)
			if !filepath.IsAbs(p) {
				return nil, fmt.Errorf("--%s=%s: a manifest needs absolute paths, since the process does not run in this directory", s.name, p)
			}
			p = filepath.Clean(p)
			switch {
			case kind == writeDir:
				add(p, true)
			case kind == writeFile:
				add(filepath.Dir(p), true)
			case kind == socketURLs:
				add(filepath.Dir(p), s.name == "listen-client-urls")
			default:
				add(filepath.Dir(p), false)
			}
		}
	}
	var out []hostPath
	for dir, writable := range dirs {
		covered := false
		for other, otherWritable := range dirs {
			if other != dir && within(dir, other) && (otherWritable || !writable) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, hostPath{dir: dir, writable: writable})
		}
	}
	slices.SortFunc(out, func(a, b hostPath) int { return strings.Compare(a.dir, b.dir) })
	return out, nil
}

// within says whether dir is parent or one of its subdirectories.
func within(dir, parent string) bool {
	if parent == "/" {
		return true
	}
	return dir == parent || strings.HasPrefix(dir, parent+"/")
}
