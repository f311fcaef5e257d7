package apiserver

import (
	"runtime"
	"testing"
)

// TestOnOwnStack: f runs with none of its caller's frames under it, however
// deep the caller is, and its panic reaches the caller.
func TestOnOwnStack(t *testing.T) {
	t.Parallel()
	var frames int
	var deep func(n int)
	deep = func(n int) {
		if n > 0 {
			deep(n - 1)
			return
		}
		onOwnStack(func() { frames = runtime.Callers(0, make([]uintptr, 100)) })
	}
	deep(50)
	if frames > 10 {
		t.Errorf("f ran under %d frames, want its own goroutine's few", frames)
	}

	defer func() {
		if p := recover(); p != "boom" {
			t.Errorf("recovered %v, want f's panic", p)
		}
	}()
	onOwnStack(func() { panic("boom") })
	t.Error("onOwnStack returned after f panicked")
}
