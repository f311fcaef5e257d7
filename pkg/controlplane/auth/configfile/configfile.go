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
	"path/filepath"
	"strings"
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

// Watch reads path (with Read) whenever it may have changed, and at least
// every interval, until ctx is done, calling apply with each content that
// differs from the last one seen. initial is the content applied at
// start, which is not offered again. A file that cannot be read (deleted
// while an editor replaces it, not a regular file, too large) is retried
// on the next change or tick, and the configuration in place stays; the
// log says so once for each new error, and unreadable, if not nil, is told
// each time (upstream counts it as a failed reload).
func Watch(ctx context.Context, path string, initial []byte, interval time.Duration, apply Apply, unreadable func(error)) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	logger := klog.FromContext(ctx).WithValues("file", path)
	last := sha256.Sum256(initial)
	lastErr := ""
	check := func() {
		data, err := Read(path)
		if err != nil {
			if err.Error() != lastErr {
				lastErr = err.Error()
				logger.Info("Cannot read the configuration file; keeping the one in use", "err", err)
			}
			if unreadable != nil {
				unreadable(err)
			}
			return
		}
		if lastErr != "" {
			lastErr = ""
			logger.Info("The configuration file can be read again")
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
// it, which a watch on the file itself would lose), and only those: events
// about path itself, and about the ".."-named entries of a ConfigMap
// volume, whose "..data" symlink swap changes every file in it. Events
// about other files (the server's own log, written beside its
// configuration) are not changes of path. Without inotify the channel
// never fires and the interval alone finds changes.
func watchDir(ctx context.Context, path string) (<-chan struct{}, func()) {
	path = filepath.Clean(path)
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
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if name := filepath.Clean(ev.Name); name != path && !strings.HasPrefix(filepath.Base(name), "..") {
					continue
				}
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
