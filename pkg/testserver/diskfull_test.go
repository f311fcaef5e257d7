package testserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
)

// TestSmallDiskRefusesWrites: a test server watches its data dir's disk
// as gcp start does, with gcp start's default: below it, writes get 507
// while reads and deletes go on, instead of etcd (and with it the test
// binary) dying when the disk fills; with space freed, writes come back.
func TestSmallDiskRefusesWrites(t *testing.T) {
	t.Parallel()
	minFree := allinone.NewOptions().Etcd.MinFreeDisk
	disk := t.TempDir()
	// Room for etcd's WAL segments and the resume margin above min.
	size := minFree + minFree/4 + 256<<20
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("a small disk needs a tmpfs: mounting one on %s: %v (run as root)", disk, err)
	}
	// Registered before Start's cleanup, so it runs after the server stops.
	t.Cleanup(func() {
		if err := syscall.Unmount(disk, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", disk, err)
		}
	})
	s := Start(t, Options{DataDir: filepath.Join(disk, "gcp")})
	ctx := context.Background()
	cms := s.Client.CoreV1().ConfigMaps("default")
	newCM := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	if _, err := cms.Create(ctx, newCM("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	filler := filepath.Join(disk, "filler")
	fill(t, filler, free(t, disk)-(minFree-16<<20))
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, err = cms.Create(ctx, newCM(fmt.Sprintf("low-%d", time.Now().UnixNano())), metav1.CreateOptions{})
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 507 || !strings.Contains(err.Error(), "database space exceeded") {
		t.Fatalf("with %d bytes free, less than gcp start's --min-free-disk %d: create answered %v, want 507", free(t, disk), minFree, err)
	}
	if _, err := cms.Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Fatalf("read while the disk is low: %v", err)
	}
	if err := cms.Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete while the disk is low: %v", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cms.Create(ctx, newCM("after"), metav1.CreateOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("no write taken within 30 s of freeing the disk: %v", err)
	}
}

// TestLowDiskFailsFast: a test server on a disk already below its
// MinFreeDisk could never write what it needs to become ready, so Run
// says so at once, naming the disk and the option, and leaves nothing.
func TestLowDiskFailsFast(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Run(context.Background(), Options{DataDir: dir, MinFreeDisk: 1 << 62})
	if err == nil {
		_ = s.Stop()
		t.Fatal("a test server started with more free disk asked for than there is")
	}
	if msg := err.Error(); !strings.Contains(msg, "--min-free-disk") || !strings.Contains(msg, "MinFreeDisk") || strings.Contains(msg, "\n") {
		t.Fatalf("Run on a low disk: %q, want one line naming the free space and Options.MinFreeDisk", msg)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Run on a low disk left %s behind: %v", dir, err)
	}
}

// free is the space df shows as available on dir's file system.
func free(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// fill writes size bytes (every block taken, not a sparse file) to path.
func fill(t *testing.T, path string, size int64) {
	t.Helper()
	if size <= 0 {
		t.Fatalf("nothing to fill: %d bytes", size)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for size > 0 {
		n := min(size, int64(len(chunk)))
		if _, err := f.Write(chunk[:n]); err != nil {
			t.Fatal(err)
		}
		size -= n
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
