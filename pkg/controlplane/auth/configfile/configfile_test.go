package configfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// recorder collects what Watch applies.
type recorder struct {
	mu      sync.Mutex
	applied []string
	refuse  string
	calls   chan string
}

func (r *recorder) apply(data []byte) error {
	r.calls <- string(data)
	if string(data) == r.refuse {
		return errors.New("refused")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied = append(r.applied, string(data))
	return nil
}

func next(t *testing.T, calls <-chan string) string {
	t.Helper()
	select {
	case got := <-calls:
		return got
	case <-time.After(30 * time.Second):
		t.Fatal("no reload within 30s")
		return ""
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	// As editors and ConfigMap volumes do: a new file renamed over it.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestWatchAppliesChangesOnceAndKeepsRefusedOnesOut(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	write(t, path, "one")
	r := &recorder{refuse: "bad", calls: make(chan string, 10)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A long interval: the file watch alone must see the changes.
		Watch(ctx, path, []byte("one"), time.Hour, r.apply, nil)
	}()
	defer func() { cancel(); <-done }()

	// The watch may begin after this write: Watch reads the file once
	// its watch is set.
	write(t, path, "two")
	if got := next(t, r.calls); got != "two" {
		t.Fatalf("applied %q, want two", got)
	}
	write(t, path, "bad")
	if got := next(t, r.calls); got != "bad" {
		t.Fatalf("offered %q, want bad", got)
	}
	write(t, path, "three")
	if got := next(t, r.calls); got != "three" {
		t.Fatalf("offered %q, want three", got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.applied) != 2 || r.applied[0] != "two" || r.applied[1] != "three" {
		t.Fatalf("applied %q", r.applied)
	}
}

func TestWatchPollsWithoutEvents(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	write(t, path, "one")
	r := &recorder{calls: make(chan string, 10)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Watch(ctx, path, []byte("not what the file holds"), 10*time.Millisecond, r.apply, nil)
	if got := next(t, r.calls); got != "one" {
		t.Fatalf("applied %q, want the file's content", got)
	}
	select {
	case got := <-r.calls:
		t.Fatalf("the same content offered again: %q", got)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestWatchTellsUnreadableFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	r := &recorder{calls: make(chan string, 10)}
	failed := make(chan error, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Watch(ctx, path, []byte("one"), 10*time.Millisecond, r.apply, func(err error) {
		select {
		case failed <- err:
		default:
		}
	})
	select {
	case err := <-failed:
		if !os.IsNotExist(err) {
			t.Fatalf("got %v, want the file's absence", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an unreadable file was not told")
	}
}

// A FIFO, a device and a file over MaxSize at the path are each refused at
// once, saying what is wrong, and a regular file put back is applied.
func TestWatchReadsOnlyBoundedRegularFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r := &recorder{calls: make(chan string, 10)}
	failed := make(chan error, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, path, []byte("one"), 20*time.Millisecond, r.apply, func(err error) {
			select {
			case failed <- err:
			default:
			}
		})
	}()
	defer func() { cancel(); <-done }()
	want := func(what string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case err := <-failed:
				if strings.Contains(err.Error(), what) {
					return
				}
			case <-deadline:
				t.Fatalf("no read refused for %q within 30s", what)
			}
		}
	}
	want("a FIFO")

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	want("a character device")

	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(big, path); err != nil {
		t.Fatal(err)
	}
	want("larger than")

	write(t, path, "two")
	if got := next(t, r.calls); got != "two" {
		t.Fatalf("applied %q, want two", got)
	}
}

// Writes to other files in the directory (the server's own log beside its
// configuration) are not read as changes of the file: with the file missing
// and a long interval, a thousand writes beside it make no read, and the
// file's own appearance is read.
func TestWatchIgnoresOtherFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	var failedReads atomic.Int32
	applied := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, path, []byte("one"), time.Hour, func(data []byte) error { applied <- string(data); return nil },
			func(error) { failedReads.Add(1) })
	}()
	defer func() { cancel(); <-done }()
	// The first read, once the watch is set.
	for end := time.Now().Add(30 * time.Second); failedReads.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the missing file was not read at the start")
		}
	}
	log, err := os.Create(filepath.Join(dir, "gcp.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for i := range 1000 {
		fmt.Fprintf(log, "line %d\n", i)
	}
	// Events come in order: once the file's own is handled, so were the
	// log's.
	write(t, path, "two")
	if got := next(t, applied); got != "two" {
		t.Fatalf("applied %q, want two", got)
	}
	if n := failedReads.Load(); n != 1 {
		t.Fatalf("%d failed reads of the missing file with a thousand writes beside it, want the first one alone", n)
	}
}
