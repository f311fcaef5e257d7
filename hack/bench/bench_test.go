package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// TestAlternateTakesTurnsAndCountsWins: each rep runs every stack once,
// the first mover changes from rep to rep, and the share is of the reps
// stack 0 won.
func TestAlternateTakesTurnsAndCountsWins(t *testing.T) {
	var order []int
	rep := 0
	byStack, faster, err := alternate(2, 4, func(stack int) (time.Duration, error) {
		order = append(order, stack)
		rep = (len(order) - 1) / 2
		// Stack 0 is faster in reps 0, 1 and 2, slower in rep 3.
		if (stack == 0) == (rep < 3) {
			return time.Millisecond, nil
		}
		return 2 * time.Millisecond, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 1, 0, 0, 1, 1, 0}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if faster != 0.75 {
		t.Errorf("stack 0 faster in %v of the reps, want 0.75", faster)
	}
	if byStack[0].ops != 4 || byStack[1].ops != 4 || byStack[0].p50 != time.Millisecond || byStack[1].p50 != 2*time.Millisecond {
		t.Errorf("latencies %+v", byStack)
	}
}

func TestAlternateStopsAtTheFirstError(t *testing.T) {
	calls := 0
	boom := errors.New("boom")
	_, _, err := alternate(2, 10, func(stack int) (time.Duration, error) {
		if calls++; calls == 3 {
			return 0, boom
		}
		return time.Millisecond, nil
	})
	if !errors.Is(err, boom) || calls != 3 {
		t.Fatalf("err %v after %d calls, want boom after 3", err, calls)
	}
}

// TestCPUTimeCountsThisProcess reads this process's own CPU time while it
// spins.
func TestCPUTimeCountsThisProcess(t *testing.T) {
	self := map[string]int{"test": os.Getpid()}
	start := cpuTime(self)
	// No interval: the check spins between its looks.
	poll.Until(t, 0, 30*time.Second, func() error {
		if got := cpuTime(self); got < start+50*time.Millisecond {
			for i := 0; i < 1e6; i++ {
			}
			return fmt.Errorf("CPU time %v while spinning, from %v", got, start)
		}
		return nil
	})
	if got := cpuTime(map[string]int{"gone": 1 << 30}); got != 0 {
		t.Errorf("CPU time of a process that does not exist: %v", got)
	}
}
