package configfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
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
