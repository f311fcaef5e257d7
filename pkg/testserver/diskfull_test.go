package testserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/test/poll"
	"github.com/gcp-project/gcp/test/smalldisk"
)

// TestSmallDiskRefusesWrites: a test server watches its data dir's disk
// as gcp start does, with gcp start's default: below it, writes get 507
// while reads and deletes go on, instead of etcd (and with it the test
// binary) dying when the disk fills; with space freed, writes come back.
func TestSmallDiskRefusesWrites(t *testing.T) {
	t.Parallel()
	minFree := allinone.NewOptions().Etcd.MinFreeDisk
	// Room for etcd's WAL segments and the resume margin above min; its
	// unmount is registered before Start's cleanup, so it runs after the
	// server stops.
	disk := smalldisk.Mount(t, minFree+minFree/4+256<<20)
	s := Start(t, Options{DataDir: filepath.Join(disk, "gcp")})
	ctx := context.Background()
	cms := s.Client.CoreV1().ConfigMaps("default")
	newCM := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	if _, err := cms.Create(ctx, newCM("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	filler := smalldisk.FillTo(t, disk, minFree-16<<20)
	var err error
	poll.Until(t, 100*time.Millisecond, 10*time.Second, func() error {
		if _, err = cms.Create(ctx, newCM(fmt.Sprintf("low-%d", time.Now().UnixNano())), metav1.CreateOptions{}); err == nil {
			return fmt.Errorf("with %d bytes free, less than gcp start's --min-free-disk %d, creates are still taken", smalldisk.Free(t, disk), minFree)
		}
		return nil
	})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 507 || !strings.Contains(err.Error(), "database space exceeded") {
		t.Fatalf("with %d bytes free, less than gcp start's --min-free-disk %d: create answered %v, want 507", smalldisk.Free(t, disk), minFree, err)
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
	poll.Until(t, 100*time.Millisecond, 30*time.Second, func() error {
		if _, err := cms.Create(ctx, newCM("after"), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("no write taken since the disk was freed: %w", err)
		}
		return nil
	})
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
