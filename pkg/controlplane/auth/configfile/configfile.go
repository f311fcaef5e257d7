// Package configfile reloads a configuration file (an
// AuthenticationConfiguration or AuthorizationConfiguration) while the
// server runs, as kube-apiserver does: the file is read again when it
// changes (watched with inotify, so a change is seen within moments) and
// at least once per interval (in case a watch misses it, as on some
// network file systems), and each content that differs from the last one
// applied is handed to the caller. A content the caller refuses leaves
// the last good one in place; the caller logs it and counts it.
package configfile

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// DefaultInterval is how often the file is read again even when no change
// was reported: kube-apiserver's one minute.
const DefaultInterval = time.Minute

// Apply takes a new content of the file. An error keeps the content applied
// before; the same content is not offered again until it changes.
type Apply func(data []byte) error

// Watch reads path whenever it may have changed, and at least every
// interval, until ctx is done, calling apply with each content that
// differs from the last one seen. initial is the content applied at
// start, which is not offered again. A file that cannot be read (deleted
// while an editor replaces it) is retried on the next change or tick, and
// the configuration in place stays; unreadable, if not nil, is told each
// time (upstream counts it as a failed reload).
func Watch(ctx context.Context, path string, initial []byte, interval time.Duration, apply Apply, unreadable func(error)) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	logger := klog.FromContext(ctx).WithValues("file", path)
	last := sha256.Sum256(initial)
	check := func() {
		data, err := os.ReadFile(path)
		if err != nil {
			logger.Info("Cannot read the configuration file; keeping the one in use", "err", err)
			if unreadable != nil {
				unreadable(err)
			}
			return
		}
		sum := sha256.Sum256(data)
		if sum == last {
			return
		}
		// Not offered again until it changes, whether applied or not:
		// a refused file is reported once, not every interval.
		last = sum
		if err := apply(data); err != nil {
			logger.Error(err, "The changed configuration file is not valid; keeping the one in use")
			return
		}
		logger.Info("Reloaded the configuration file")
	}

	changes, stop := watchDir(ctx, path)
	defer stop()
	// A change made after initial was read and before the watch began.
	check()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			check()
		case <-changes:
			check()
		}
	}
}

// watchDir reports changes to path by watching its directory (editors and
// Kubernetes' ConfigMap volumes replace a file by renaming another over
// it, which a watch on the file itself would lose). Without inotify the
// channel never fires and the interval alone finds changes.
func watchDir(ctx context.Context, path string) (<-chan struct{}, func()) {
	changes := make(chan struct{}, 1)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		klog.FromContext(ctx).V(2).Info("No file watch; reading the file every interval", "file", path, "err", err)
		return changes, func() {}
	}
	if err := w.Add(filepath.Dir(path)); err != nil {
		klog.FromContext(ctx).V(2).Info("No file watch; reading the file every interval", "file", path, "err", err)
		_ = w.Close()
		return changes, func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case _, ok := <-w.Events:
				if !ok {
					return
				}
				// Any event in the directory: reading the file and
				// comparing its hash is cheap, and a symlink swap
				// (..data in a ConfigMap volume) names another file.
				select {
				case changes <- struct{}{}:
				default:
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return changes, func() {
		_ = w.Close()
		<-done
	}
}
