package oidcprovider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// HydraVersion is the ory/hydra release the tool module in hack/tools/hydra
// pins, and the first part of the cached binary's name.
const HydraVersion = "v2.3.0"

// toolModule is the throwaway module, relative to gcp's root, whose only
// requirement is hydra; gcp's own go.mod never sees hydra's dependencies.
const toolModule = "hack/tools/hydra"

// buildTags are the tags hydra's own release builds use: without "sqlite"
// the in-memory database (DSN "memory", SQLite) is not compiled in.
const buildTags = "sqlite,sqlite_omit_load_extension"

// buildTimeout bounds a cold build (about four minutes on a loaded 2-core
// machine) with room to spare, so a hung build fails instead of eating the
// test binary's whole timeout.
const buildTimeout = 15 * time.Minute

var built struct {
	once sync.Once
	path string
	took time.Duration // how long this process spent building, if it did
	err  error
}

// Binary returns the path of the hydra binary, building it on the first call
// on this machine. The binary is cached under
// os.UserCacheDir()/gcp-test/hydra-<version>-<hash of the tool module's
// go.mod and go.sum>, so a changed pin builds anew. Within a test binary the
// build runs once; across test binaries and packages a file lock beside it
// makes one build and the others wait for it.
func Binary(t testing.TB) string {
	t.Helper()
	first := false
	built.once.Do(func() {
		first = true
		built.path, built.took, built.err = buildHydra()
	})
	if built.err != nil {
		t.Fatalf("oidcprovider: hydra %s: %v", HydraVersion, built.err)
	}
	if first && built.took > 0 {
		t.Logf("oidcprovider: built hydra %s into %s in %s", HydraVersion, built.path, built.took.Round(time.Second))
	}
	return built.path
}

func buildHydra() (string, time.Duration, error) {
	modDir, err := findToolModule()
	if err != nil {
		return "", 0, err
	}
	key, err := moduleKey(modDir)
	if err != nil {
		return "", 0, err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", 0, fmt.Errorf("no cache directory for the built binary: %w", err)
	}
	dir := filepath.Join(base, "gcp-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, err
	}
	name := "hydra-" + HydraVersion + "-" + key
	bin := filepath.Join(dir, name)
	if isExecutable(bin) {
		return bin, 0, nil
	}

	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", 0, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", 0, fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	// The deferred Close releases the lock.
	if isExecutable(bin) { // another process built it while this one waited
		return bin, 0, nil
	}

	tmpDir, err := os.MkdirTemp(dir, name+".tmp-")
	if err != nil {
		return "", 0, err
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "hydra")

	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", 0, fmt.Errorf("building needs the go command: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-tags", buildTags,
		"-o", tmp, "github.com/ory/hydra/v2")
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(),
		"GOWORK=off", "GOFLAGS=-mod=readonly", "CGO_ENABLED=1",
		"GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return "", 0, fmt.Errorf("go build in %s (after %s): %v\n%s", modDir, time.Since(start).Round(time.Second), err, out.String())
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", 0, err
	}
	return bin, time.Since(start), nil
}

// findToolModule walks up from the working directory, which go test sets to
// the package's directory, to gcp's root and returns the tool module's
// directory.
func findToolModule() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		candidate := filepath.Join(dir, toolModule)
		if _, err := os.Stat(filepath.Join(candidate, "go.mod")); err == nil {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no " + toolModule + "/go.mod above the working directory: run the test from inside gcp's repository")
		}
		dir = parent
	}
}

// moduleKey is a short hash of the tool module's go.mod and go.sum.
func moduleKey(modDir string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(modDir, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
