package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"k8s.io/klog/v2"
)

// DefaultMinFreeDisk is the free space below which a member refuses
// writes (Config.MinFreeDisk, --min-free-disk): 512 MiB. etcd stops the
// whole process when a write to its WAL or database fails for space, and
// it needs room that a full disk no longer has: the WAL preallocates each
// 64 MB segment before it needs it, and the database file grows by whole
// batches of writes before the check below sees them (writes refused under
// the alarm are refused before raft, refusewrites.go, so they do not grow
// the WAL). 512 MiB holds six segments and a burst of writes on top, and is
// little beside the disks etcd runs on.
const DefaultMinFreeDisk int64 = 512 << 20

// diskCheckInterval is how often a member measures its data dir's free
// space: often enough that a burst of writes has little time to use up
// the margin, and a statfs costs microseconds.
const diskCheckInterval = 500 * time.Millisecond

// diskAlarmFile, in the data dir, marks that the member raised its NOSPACE
// alarm for low disk, so that a restarted member still clears its own
// alarm, and never etcd's quota alarm or an operator's.
const diskAlarmFile = "gcp-disk-nospace"

// resumeAbove is the free space at which a member that refuses writes for
// low disk takes them again: a quarter more than min, so that free space
// that hovers around min does not raise and clear the alarm at each check.
func resumeAbove(min int64) int64 { return min + min/4 }

// diskWatch keeps a member's NOSPACE alarm raised while its data dir's
// file system has less than min bytes free. etcd's own NOSPACE alarm is
// what refuses the writes: every member then refuses puts, transactions
// that put and lease grants, while reads, deletes and compaction go on,
// and the API server answers 507 as it does for a full quota.
type diskWatch struct {
	dir    string
	min    int64
	server *etcdserver.EtcdServer
	// free measures the file system; statfs except in tests.
	free func(dir string) (int64, error)

	// ours is whether the member's NOSPACE alarm is one this watch raised
	// (diskAlarmFile exists); only run's goroutine uses it.
	ours bool
	// low is why writes are refused for disk space, nil while they are not.
	low atomic.Pointer[error]
	// failing is the last error measuring or raising, logged once.
	failing string
}

func newDiskWatch(dir string, min int64, server *etcdserver.EtcdServer) *diskWatch {
	w := &diskWatch{dir: dir, min: min, server: server, free: freeBytes}
	_, err := os.Stat(filepath.Join(dir, diskAlarmFile))
	w.ours = err == nil
	return w
}

// run checks at once and then every diskCheckInterval until ctx is done.
func (w *diskWatch) run(ctx context.Context) {
	t := time.NewTicker(diskCheckInterval)
	defer t.Stop()
	for {
		w.check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// err is why the member refuses writes for disk space, or nil.
func (w *diskWatch) err() error {
	if p := w.low.Load(); p != nil {
		return *p
	}
	return nil
}

// check measures the free space once and raises or clears the alarm.
func (w *diskWatch) check(ctx context.Context) {
	free, err := w.free(w.dir)
	if err != nil {
		w.fail(fmt.Errorf("measuring the free space of --data-dir %s: %w", w.dir, err))
		return
	}
	raised := w.alarmRaised()
	switch {
	case free < w.min:
		low := lowDisk(w.dir, free, w.min)
		w.low.Store(&low)
		if raised {
			return
		}
		// The mark first: a member that stops between the two clears the
		// alarm when it comes back.
		if err := writeMark(filepath.Join(w.dir, diskAlarmFile)); err != nil {
			klog.ErrorS(err, "Marking the disk NOSPACE alarm in the data dir; if the member restarts before space is freed, disarm the alarm by hand", "dataDir", w.dir)
		}
		w.ours = true
		if err := w.alarm(ctx, pb.AlarmRequest_ACTIVATE); err != nil {
			w.fail(fmt.Errorf("raising the NOSPACE alarm for low disk: %w", err))
			return
		}
		w.failing = ""
		klog.ErrorS(nil, "Data dir is low on disk space: raised etcd's NOSPACE alarm, writes are refused until space is freed",
			"dataDir", w.dir, "free", size(free), "minFreeDisk", size(w.min), "resumeAbove", size(resumeAbove(w.min)))
	case free >= resumeAbove(w.min):
		if !w.ours {
			w.low.Store(nil)
			return
		}
		if raised {
			if err := w.alarm(ctx, pb.AlarmRequest_DEACTIVATE); err != nil {
				w.fail(fmt.Errorf("disarming the NOSPACE alarm raised for low disk: %w", err))
				return
			}
			klog.InfoS("Data dir has disk space again: disarmed the NOSPACE alarm raised for it, writes are taken again",
				"dataDir", w.dir, "free", size(free))
		}
		if err := os.Remove(filepath.Join(w.dir, diskAlarmFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			w.fail(fmt.Errorf("removing the disk alarm mark: %w", err))
			return
		}
		w.ours = false
		w.failing = ""
		w.low.Store(nil)
	}
}

// lowDisk is why a member with dir as its data dir refuses writes when its
// file system has free bytes, less than min.
func lowDisk(dir string, free, min int64) error {
	return fmt.Errorf("the file system of etcd's data dir %s has %s free, less than --min-free-disk %s: etcd refuses writes (NOSPACE) until more than %s is free",
		dir, size(free), size(min), size(resumeAbove(min)))
}

// CheckFreeDisk returns the error a member's disk watch would report for a
// data dir at dir with MinFreeDisk min (nil if min is 0 or more is free),
// for a caller that would rather not start a member that refuses writes
// from the start: pkg/testserver, whose fresh server could not write
// what it needs to become ready. dir need not exist yet: its nearest
// existing parent is measured.
func CheckFreeDisk(dir string, min int64) error {
	if min <= 0 {
		return nil
	}
	measured := dir
	for {
		if _, err := os.Stat(measured); err == nil || filepath.Dir(measured) == measured {
			break
		}
		measured = filepath.Dir(measured)
	}
	free, err := freeBytes(measured)
	if err != nil {
		return fmt.Errorf("measuring the free space of --data-dir %s: %w", dir, err)
	}
	if free < min {
		return lowDisk(dir, free, min)
	}
	return nil
}

// fail logs err unless it is the one logged last.
func (w *diskWatch) fail(err error) {
	if err.Error() != w.failing {
		klog.ErrorS(err, "Watching etcd's free disk space", "dataDir", w.dir)
		w.failing = err.Error()
	}
}

// alarmRaised reports whether this member's NOSPACE alarm is raised, for
// whatever reason.
func (w *diskWatch) alarmRaised() bool {
	id := uint64(w.server.MemberID())
	for _, a := range w.server.Alarms() {
		if a.MemberID == id && a.Alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

// alarm raises or clears this member's NOSPACE alarm through the cluster.
func (w *diskWatch) alarm(ctx context.Context, action pb.AlarmRequest_AlarmAction) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := w.server.Alarm(ctx, &pb.AlarmRequest{Action: action, MemberID: uint64(w.server.MemberID()), Alarm: pb.AlarmType_NOSPACE})
	return err
}

// writeMark creates an empty file at path.
func writeMark(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// freeBytes is the space unprivileged users may still use on dir's file
// system (what df shows as available).
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	// The conversions: the field types differ between systems.
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// size formats n bytes for people: 512 MiB, 12.3 MiB.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return trimZero(float64(n)/(1<<30)) + " GiB"
	case n >= 1<<20:
		return trimZero(float64(n)/(1<<20)) + " MiB"
	case n >= 1<<10:
		return trimZero(float64(n)/(1<<10)) + " KiB"
	}
	return fmt.Sprintf("%d B", n)
}

// trimZero formats f with one decimal, without a trailing ".0".
func trimZero(f float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0") }
