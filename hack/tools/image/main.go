// Command image builds gcp's container image from a statically linked
// binary, the way ko does: one layer on scratch, written with
// go-containerregistry, no Docker daemon and no registry. It is a module of
// its own so that go-containerregistry stays out of gcp's go.mod; hack/build.sh
// image runs it with `go run`.
//
//	go run . --binary ../../../gcp --name gcp --archive gcp.tar
//
// The image is reproducible: every time in it (the layer's files, the
// config's created, the created label) is the commit's time, taken from
// SOURCE_DATE_EPOCH or else from the binary's own build info (vcs.time), so
// the same commit gives the same digest.
//
// The archive is both an OCI image layout (oci-layout, index.json, blobs/)
// and a docker-archive (manifest.json with RepoTags) over the same blobs, as
// `docker save` writes since Docker 25: podman load, docker load,
// ctr images import and skopeo (oci-archive: or docker-archive:) all read it
// and name the image.
package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// versionInfo is the part of `gcp version -o json` the image is named and
// labelled from.
type versionInfo struct {
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	binary := fs.String("binary", "", "The statically linked binary to ship (built with CGO_ENABLED=0 GOOS=linux).")
	name := fs.String("name", "gcp", "Image name, and the binary's name in /usr/local/bin; the tag is the binary's `version`.")
	archive := fs.String("archive", "", "File to write the image to (an OCI layout that is also a docker-archive).")
	revision := fs.String("revision", "", "The commit built, for the revision label; default the binary's vcs.revision.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *binary == "" || *archive == "" || fs.NArg() != 0 {
		return errors.New("usage: image --binary FILE --archive FILE [--name NAME]")
	}
	if strings.ContainsAny(*name, ":@ ") || *name == "" {
		return fmt.Errorf("--name %q: a repository name without tag or digest", *name)
	}

	bi, err := buildinfo.ReadFile(*binary)
	if err != nil {
		return fmt.Errorf("reading the build info of %s: %w", *binary, err)
	}
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" && s.Value != "0" {
			return fmt.Errorf("%s was built with cgo: build it with CGO_ENABLED=0 for an image without a libc", *binary)
		}
	}
	out, err := exec.Command(*binary, "version", "-o", "json").Output()
	if err != nil {
		return fmt.Errorf("%s version -o json: %w", *binary, err)
	}
	var v versionInfo
	if err := json.Unmarshal(out, &v); err != nil || v.GitVersion == "" {
		return fmt.Errorf("%s version -o json printed no gitVersion (%v): %s", *binary, err, out)
	}
	created, err := creationTime(v.BuildDate)
	if err != nil {
		return err
	}
	if *revision == "" {
		*revision = v.GitCommit
	}
	if *revision == "" {
		return errors.New("no --revision, and the binary has no vcs.revision: give the commit built")
	}

	bin, err := os.ReadFile(*binary)
	if err != nil {
		return err
	}
	links, err := linkNames(*binary)
	if err != nil {
		return err
	}
	layerTar, err := rootfs(*name, bin, links, created)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return err
	}

	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   v1.Time{Time: created},
		CreatedBy: "hack/build.sh image",
		Comment:   "the statically linked " + *name + " binary, its links per command, /etc/passwd and /etc/group",
	}})
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: created}
	cfg.OS = "linux"
	cfg.Architecture = runtime.GOARCH
	cfg.Author = ""
	cfg.Config = v1.Config{
		Entrypoint: []string{"/usr/local/bin/" + *name},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":    *name,
			"org.opencontainers.image.source":   sourceURL(bi.Main.Path),
			"org.opencontainers.image.version":  v.GitVersion,
			"org.opencontainers.image.revision": *revision,
			"org.opencontainers.image.created":  created.Format(time.RFC3339),
		},
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return err
	}

	ref := *name + ":" + v.GitVersion
	sizes, err := writeArchive(*archive, img, ref)
	if err != nil {
		os.Remove(*archive)
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s digest %s id %s: %s compressed, %s unpacked, in %s\n",
		ref, digest, id, mb(sizes.compressed), mb(int64(len(layerTar))), *archive)
	return nil
}

// creationTime is SOURCE_DATE_EPOCH when set, else the binary's commit
// time: never the clock, so that a rebuild gives the same digest.
func creationTime(buildDate string) (time.Time, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: not a number of seconds", s)
		}
		return time.Unix(sec, 0).UTC(), nil
	}
	if buildDate == "" {
		return time.Time{}, errors.New("the binary has no commit time (built outside a git checkout, or with -buildvcs=false): set SOURCE_DATE_EPOCH")
	}
	t, err := time.Parse(time.RFC3339, buildDate)
	if err != nil {
		return time.Time{}, fmt.Errorf("the binary's buildDate %q: %w", buildDate, err)
	}
	return t.UTC(), nil
}

// sourceURL is where the module's source lives, for the source label.
func sourceURL(module string) string {
	if strings.HasPrefix(module, "github.com/") || strings.HasPrefix(module, "gitlab.com/") {
		return "https://" + module
	}
	return module
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// rootfs is the image's only layer: what a static Go program needs and
// nothing else. No CA certificates: the static pods mount the host's
// /etc/ssl/certs (see docs/deploy.md), so an OIDC issuer is trusted as the
// host trusts it and the image holds no roots that go stale.
func rootfs(name string, binary []byte, links []string, mtime time.Time) ([]byte, error) {
	type entry struct {
		mode int64
		body []byte // nil for a directory or a link
		link string // a symlink's target
	}
	files := map[string]entry{
		"etc/":           {0o755, nil, ""},
		"tmp/":           {0o1777, nil, ""},
		"usr/":           {0o755, nil, ""},
		"usr/local/":     {0o755, nil, ""},
		"usr/local/bin/": {0o755, nil, ""},
		// root for the static pods (they read root's 0600 keys with no
		// capabilities), nobody for `podman run --user 65534`.
		"etc/passwd":            {0o644, []byte("root:x:0:0:root:/:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n"), ""},
		"etc/group":             {0o644, []byte("root:x:0:\nnobody:x:65534:\n"), ""},
		"etc/nsswitch.conf":     {0o644, []byte("hosts: files dns\n"), ""},
		"usr/local/bin/" + name: {0o755, binary, ""},
	}
	// hyperkube-style names that run one command (gcp-apiserver, kubectl),
	// beside the binary they point to.
	for _, l := range links {
		files["usr/local/bin/"+l] = entry{0o777, nil, name}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := files[n]
		h := &tar.Header{Name: n, Mode: e.mode, ModTime: mtime, Uname: "root", Gname: "root", Format: tar.FormatPAX}
		switch {
		case e.link != "":
			h.Typeflag = tar.TypeSymlink
			h.Linkname = e.link
		case e.body == nil:
			h.Typeflag = tar.TypeDir
		default:
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// linkNames returns the file names binary runs one of its commands under,
// as `binary --make-symlinks DIR` makes them.
func linkNames(binary string) ([]string, error) {
	dir, err := os.MkdirTemp("", "image-links")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if out, err := exec.Command(binary, "--make-symlinks", dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s --make-symlinks: %w: %s", binary, err, out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s --make-symlinks made no links", binary)
	}
	return names, nil
}

type archiveSizes struct{ compressed int64 }

// writeArchive writes img as an OCI image layout that is also a
// docker-archive, every tar header dated at the epoch so that the file, not
// only the image, is the same on every build.
func writeArchive(file string, img v1.Image, ref string) (archiveSizes, error) {
	var sizes archiveSizes
	manifest, err := img.RawManifest()
	if err != nil {
		return sizes, err
	}
	digest, err := img.Digest()
	if err != nil {
		return sizes, err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return sizes, err
	}
	configName, err := img.ConfigName()
	if err != nil {
		return sizes, err
	}
	layers, err := img.Layers()
	if err != nil {
		return sizes, err
	}
	full := fullName(ref)
	_, tag, _ := strings.Cut(ref, ":")
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     types.OCIImageIndex,
		"manifests": []map[string]any{{
			"mediaType": types.OCIManifestSchema1,
			"digest":    digest.String(),
			"size":      len(manifest),
			"annotations": map[string]string{
				// containerd (ctr images import) names the image from this one,
				"io.containerd.image.name": full,
				// podman and skopeo from this one, the tag alone as Docker writes it.
				"org.opencontainers.image.ref.name": tag,
			},
		}},
	})
	if err != nil {
		return sizes, err
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	dockerManifest := []map[string]any{{
		"Config":   blob(configName),
		"RepoTags": []string{ref},
		"Layers":   []string{},
	}}

	f, err := os.Create(file)
	if err != nil {
		return sizes, err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{}
	add := func(name string, size int64, body io.Reader) error {
		var parents []string // innermost first
		for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if err := tw.WriteHeader(&tar.Header{Name: parents[i] + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := io.Copy(tw, body)
		return err
	}
	addBytes := func(name string, b []byte) error { return add(name, int64(len(b)), bytes.NewReader(b)) }

	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return sizes, err
		}
		size, err := l.Size()
		if err != nil {
			return sizes, err
		}
		rc, err := l.Compressed()
		if err != nil {
			return sizes, err
		}
		err = add(blob(d), size, rc)
		rc.Close()
		if err != nil {
			return sizes, err
		}
		sizes.compressed += size
		dockerManifest[0]["Layers"] = append(dockerManifest[0]["Layers"].([]string), blob(d))
	}
	dm, err := json.Marshal(dockerManifest)
	if err != nil {
		return sizes, err
	}
	for _, e := range []struct {
		name string
		body []byte
	}{
		{blob(configName), config},
		{blob(digest), manifest},
		{"index.json", index},
		{"manifest.json", dm},
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
	} {
		if err := addBytes(e.name, e.body); err != nil {
			return sizes, err
		}
	}
	if err := tw.Close(); err != nil {
		return sizes, err
	}
	return sizes, f.Close()
}

// fullName is ref as containerd and the kubelet resolve it: a name whose
// first part is not a host is on docker.io, in library/ when it has no
// slash (gcp:v1 is docker.io/library/gcp:v1).
func fullName(ref string) string {
	first, rest, hasSlash := strings.Cut(ref, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return ref
	}
	if !hasSlash {
		return "docker.io/library/" + ref
	}
	return "docker.io/" + first + "/" + rest
}
