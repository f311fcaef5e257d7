package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gcp-project/gcp/test/poll"
)

// testDiskWatch is a diskWatch of h's member whose free space the test
// sets (filling a real file system is test/e2e's TestDiskFull*); checks
// run when the test calls check.
func testDiskWatch(h *Handle, dir string, min int64, free *atomic.Int64) *diskWatch {
	w := newDiskWatch(dir, min, h.etcd.Server)
	w.free = func(string) (int64, error) { return free.Load(), nil }
	return w
}

// startUnwatched starts a member in its own data dir with its own disk
// watch off, for a testDiskWatch to do the checks instead, and returns the
// dir and config (to restart it) and the member.
func startUnwatched(t *testing.T) (string, Config, *Handle) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "etcd")
	cfg := DefaultConfig(dir)
	cfg.MinFreeDisk = 0
	return dir, cfg, startT(t, cfg)
}

func noSpaceRaised(t *testing.T, c *clientv3.Client) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.AlarmList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range resp.Alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

// Below MinFreeDisk the member raises NOSPACE, so puts fail with etcd's
// "database space exceeded" while reads and deletes work; it keeps the
// alarm until a quarter more than MinFreeDisk is free, then disarms it,
// also after a restart in between; and an alarm it did not raise (etcd's
// quota, an operator's) it leaves for the operator.
func TestDiskWatchRaisesAndClearsItsOwnAlarm(t *testing.T) {
	t.Parallel()
	dir, cfg, h := startUnwatched(t)
	c := inProcessT(t, h)
	ctx := context.Background()
	put(t, c, "kept", "v")
	put(t, c, "doomed", "v")

	const min = 100 << 20
	var free atomic.Int64
	free.Store(min - 1)
	w := testDiskWatch(h, dir, min, &free)
	w.check(ctx)
	if !noSpaceRaised(t, c) || w.err() == nil {
		t.Fatalf("below --min-free-disk: alarm raised %v, err %v", noSpaceRaised(t, c), w.err())
	}
	if _, err := c.Put(ctx, "new", "v"); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("put while the disk is low: %v, want %v", err, rpctypes.ErrNoSpace)
	}
	if got := get(t, c, "kept"); got != "v" {
		t.Fatalf("read while the disk is low: %q", got)
	}
	if _, err := c.Delete(ctx, "doomed"); err != nil {
		t.Fatalf("delete while the disk is low: %v", err)
	}

	// Above min but within the margin: still refused.
	free.Store(resumeAbove(min) - 1)
	w.check(ctx)
	if !noSpaceRaised(t, c) {
		t.Fatal("the alarm was disarmed with less than resumeAbove(min) free")
	}

	// A restart keeps the alarm and the mark; the new member's watch
	// disarms it once space is back.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = startT(t, cfg)
	c = inProcessT(t, h)
	if !noSpaceRaised(t, c) {
		t.Fatal("the alarm did not survive a restart")
	}
	free.Store(resumeAbove(min))
	w = testDiskWatch(h, dir, min, &free)
	w.check(ctx)
	if noSpaceRaised(t, c) || w.err() != nil {
		t.Fatalf("with space back: alarm raised %v, err %v", noSpaceRaised(t, c), w.err())
	}
	if _, err := os.Stat(filepath.Join(dir, diskAlarmFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the alarm mark outlives the alarm: %v", err)
	}
	put(t, c, "new", "v")

	// Another's NOSPACE alarm stays when the disk recovers.
	if _, err := h.etcd.Server.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: uint64(h.etcd.Server.MemberID()), Alarm: pb.AlarmType_NOSPACE}); err != nil {
		t.Fatal(err)
	}
	free.Store(min - 1)
	w.check(ctx)
	free.Store(resumeAbove(min))
	w.check(ctx)
	if !noSpaceRaised(t, c) {
		t.Fatal("the watch disarmed a NOSPACE alarm it did not raise")
	}

	// The operator disarms it while the disk is low: the watch raises its
	// own, and clears that one.
	if _, err := c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: uint64(h.etcd.Server.MemberID()), Alarm: pb.AlarmType_NOSPACE}); err != nil {
		t.Fatal(err)
	}
	free.Store(min - 1)
	w.check(ctx)
	if !noSpaceRaised(t, c) {
		t.Fatal("disarmed by hand while the disk is low: the watch did not raise the alarm again")
	}
	free.Store(resumeAbove(min))
	w.check(ctx)
	if noSpaceRaised(t, c) {
		t.Fatal("the watch did not disarm the alarm it raised again")
	}
}

// A member started with MinFreeDisk watches its data dir's file system:
// with more than the whole disk asked for, it refuses writes at once and
// says why.
func TestMinFreeDiskRefusesWrites(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etcd")
	cfg := DefaultConfig(dir)
	cfg.MinFreeDisk = 1 << 62
	h := startT(t, cfg)
	c := inProcessT(t, h)
	poll.Until(t, 50*time.Millisecond, 10*time.Second, func() error {
		if h.LowDisk() == nil || !noSpaceRaised(t, c) {
			return fmt.Errorf("no NOSPACE alarm: LowDisk %v", h.LowDisk())
		}
		return nil
	})
	if _, err := c.Put(context.Background(), "k", "v"); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("put: %v, want %v", err, rpctypes.ErrNoSpace)
	}
}

// CheckFreeDisk says what the watch would, for a data dir that need not
// exist yet.
func TestCheckFreeDisk(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "not", "yet")
	if err := CheckFreeDisk(dir, 1); err != nil {
		t.Fatalf("1 byte: %v", err)
	}
	if err := CheckFreeDisk(dir, 0); err != nil {
		t.Fatalf("0 (no watch): %v", err)
	}
	err := CheckFreeDisk(dir, 1<<62)
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "less than --min-free-disk 4294967296 GiB") {
		t.Fatalf("more than the disk: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("CheckFreeDisk made %s: %v", dir, err)
	}
}
