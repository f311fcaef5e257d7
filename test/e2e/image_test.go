package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// buildImage runs `hack/build.sh image --archive FILE` and returns the
// archive's files by name.
func buildImage(t *testing.T, archive string) map[string][]byte {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "build.sh"), "image", "--archive", archive)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/build.sh image: %v\n%s", err, out)
	}
	t.Logf("hack/build.sh image: %s", bytes.TrimSpace(out))
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	return files
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

func blobOf(t *testing.T, files map[string][]byte, d descriptor) []byte {
	t.Helper()
	algo, hexDigest, _ := strings.Cut(d.Digest, ":")
	b, ok := files["blobs/"+algo+"/"+hexDigest]
	if !ok || int64(len(b)) != d.Size {
		t.Fatalf("blob %s: missing or not %d bytes", d.Digest, d.Size)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hexDigest {
		t.Fatalf("blob %s does not match its digest", d.Digest)
	}
	return b
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// TestImage builds the image twice from this commit and checks it is the
// same archive, byte for byte; that it is an OCI layout and a
// docker-archive naming gcp:<gcp version>, the static pods' default image;
// that its labels and times are the commit's; and that its one layer holds
// a static gcp at the entrypoint, which runs.
func TestImage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := buildImage(t, filepath.Join(dir, "a.tar"))
	again := buildImage(t, filepath.Join(dir, "b.tar"))
	a, _ := os.ReadFile(filepath.Join(dir, "a.tar"))
	b, _ := os.ReadFile(filepath.Join(dir, "b.tar"))
	if !bytes.Equal(a, b) || len(first) != len(again) {
		t.Fatal("two builds of the same commit differ")
	}

	var info struct{ GitVersion string }
	mustJSON(t, []byte(mustGCP(t, "version", "-o", "json")), &info)
	tag := info.GitVersion

	if string(first["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", first["oci-layout"])
	}
	var index struct{ Manifests []descriptor }
	mustJSON(t, first["index.json"], &index)
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json: %s", first["index.json"])
	}
	m := index.Manifests[0]
	if m.Annotations["io.containerd.image.name"] != "docker.io/library/gcp:"+tag || m.Annotations["org.opencontainers.image.ref.name"] != tag {
		t.Errorf("index annotations %v, want the name gcp:%s", m.Annotations, tag)
	}
	var manifest struct {
		MediaType string
		Config    descriptor
		Layers    []descriptor
	}
	mustJSON(t, blobOf(t, first, m), &manifest)
	if manifest.MediaType != "application/vnd.oci.image.manifest.v1+json" || len(manifest.Layers) != 1 {
		t.Fatalf("manifest %+v", manifest)
	}
	var docker []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	mustJSON(t, first["manifest.json"], &docker)
	layerHex := strings.TrimPrefix(manifest.Layers[0].Digest, "sha256:")
	if len(docker) != 1 || len(docker[0].RepoTags) != 1 || docker[0].RepoTags[0] != "gcp:"+tag ||
		docker[0].Config != "blobs/sha256/"+strings.TrimPrefix(manifest.Config.Digest, "sha256:") ||
		len(docker[0].Layers) != 1 || docker[0].Layers[0] != "blobs/sha256/"+layerHex {
		t.Errorf("manifest.json %s does not name gcp:%s over the OCI blobs", first["manifest.json"], tag)
	}

	var config struct {
		Created      time.Time
		OS           string
		Architecture string
		Config       struct {
			Entrypoint []string
			Env        []string
			User       string
			Labels     map[string]string
		}
	}
	mustJSON(t, blobOf(t, first, manifest.Config), &config)
	commitTime := gitCommitTime(t)
	if !config.Created.Equal(commitTime) {
		t.Errorf("created %s, want the commit's time %s", config.Created, commitTime)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  tag,
		"org.opencontainers.image.revision": git(t, "rev-parse", "HEAD"),
		"org.opencontainers.image.created":  commitTime.Format(time.RFC3339),
		"org.opencontainers.image.source":   "https://github.com/gcp-project/gcp",
	} {
		if got := config.Config.Labels[k]; got != want || want == "" {
			t.Errorf("label %s=%q, want %q", k, got, want)
		}
	}
	if config.OS != "linux" || len(config.Config.Entrypoint) != 1 || config.Config.Entrypoint[0] != "/usr/local/bin/gcp" ||
		!strings.Contains(strings.Join(config.Config.Env, " "), "PATH=/usr/local/bin:") {
		t.Errorf("config %+v: want entrypoint /usr/local/bin/gcp with /usr/local/bin on PATH", config)
	}

	// The layer: the files, each dated at the commit, and a gcp that runs.
	zr, err := gzip.NewReader(bytes.NewReader(blobOf(t, first, manifest.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	binary := filepath.Join(t.TempDir(), "gcp")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(commitTime) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: time %s, owner %d:%d; want the commit's time, root", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		if h.Typeflag == tar.TypeSymlink && (!strings.HasPrefix(h.Name, "usr/local/bin/") || h.Linkname != "gcp") {
			t.Errorf("%s -> %s: want a link to gcp beside it", h.Name, h.Linkname)
		}
		if h.Name == "usr/local/bin/gcp" {
			body, _ := io.ReadAll(tr)
			if err := os.WriteFile(binary, body, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := "etc/ etc/group etc/nsswitch.conf etc/passwd tmp/ usr/ usr/local/ usr/local/bin/ usr/local/bin/gcp" +
		// hyperkube-style: each runs its command (commands/multicall).
		" usr/local/bin/gcp-apiserver usr/local/bin/gcp-controllers usr/local/bin/gcp-etcd usr/local/bin/gcp-manifests" +
		" usr/local/bin/gcp-pki usr/local/bin/gcp-snapshot usr/local/bin/gcp-start usr/local/bin/gcp-version usr/local/bin/kubectl"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("layer holds %s, want %s", got, want)
	}
	f, err := elf.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the image's gcp is dynamically linked: scratch has no loader")
		}
	}
	f.Close()
	out, err := exec.Command(binary, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "gcp "+tag+" ") {
		t.Errorf("the image's gcp version: %v %s", err, out)
	}
	// The image's links, as the layer has them: gcp-version is gcp
	// version, kubectl is gcp kubectl.
	for link, args := range map[string][]string{"gcp-version": nil, "kubectl": {"version", "--client"}} {
		path := filepath.Join(filepath.Dir(binary), link)
		if err := os.Symlink("gcp", path); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(path, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
		out, err := cmd.CombinedOutput()
		if want := map[string]string{"gcp-version": "gcp " + tag + " ", "kubectl": "Client Version: " + tag}[link]; err != nil || !strings.HasPrefix(string(out), want) {
			t.Errorf("the image's %s: %v %s, want %q", link, err, out, want)
		}
	}
}

func git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// gitCommitTime is HEAD's commit time, the image's every time.
func gitCommitTime(t *testing.T) time.Time {
	t.Helper()
	sec, err := strconv.ParseInt(git(t, "log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(sec, 0).UTC()
}
