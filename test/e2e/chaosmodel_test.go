package e2e

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/anishathalye/porcupine"
)

// The chaos test's history and how it is checked: every client operation
// is one porcupine.Operation on one key (a ConfigMap's name), and the
// history must be linearizable against kvModel; every watcher's events are
// checked against each other and against the acknowledged writes by
// checkWatches.

// kvOp is what a chaos client does to one key.
type kvOp string

const (
	opCreate kvOp = "create" // POST; AlreadyExists if the key is there
	opUpdate kvOp = "update" // PUT without a resourceVersion; NotFound if it is not
	opDelete kvOp = "delete" // DELETE; NotFound if it is not there
	opGet    kvOp = "get"    // GET, a quorum read from etcd
	opList   kvOp = "list"   // LIST by metadata.name without a resourceVersion, served consistently from the watch cache
)

// kvInput is a porcupine.Operation's Input: the operation, its key, and for
// creates and updates the value written (unique in the whole run, so a
// value read names the write that made it).
type kvInput struct {
	op    kvOp
	key   string
	value string
}

// outcome is how the server answered.
type outcome int

const (
	// outUnknown: no answer, or an answer that does not say whether the
	// write happened (a timeout, a dropped connection, a 5xx). The
	// operation may have happened at any time from its call on.
	outUnknown outcome = iota
	outOK
	outNotFound
	outAlreadyExists
)

func (o outcome) String() string {
	return [...]string{"unknown", "ok", "notFound", "alreadyExists"}[o]
}

// kvOutput is a porcupine.Operation's Output. For reads, found and value
// say what was read.
type kvOutput struct {
	outcome outcome
	found   bool
	value   string
}

// kvState is one key's state: absent, or present with a value.
type kvState struct {
	exists bool
	value  string
}

// kvModel is a register per key with create, update, delete and reads, as
// the Kubernetes API promises it for one object: each operation takes
// effect at one instant between its call and its answer. An operation of
// unknown outcome may or may not have taken effect, so the model is
// nondeterministic and porcupine follows both.
var kvModel = (&porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(kvInput).key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, byKey[k])
		}
		return parts
	},
	Init: func() []any { return []any{kvState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(kvState), input.(kvInput), output.(kvOutput)
		next, answer, changes := kvStep(s, in)
		if out.outcome == outUnknown {
			if !changes {
				return []any{s}
			}
			return []any{s, next}
		}
		if answer != out {
			return nil
		}
		return []any{next}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		desc := string(in.op) + " " + in.key
		if in.value != "" {
			desc += "=" + in.value
		}
		switch {
		case (in.op == opGet || in.op == opList) && out.outcome == outOK && out.found:
			return desc + " → " + out.value
		case (in.op == opGet || in.op == opList) && out.outcome == outOK:
			return desc + " → absent"
		}
		return desc + " → " + out.outcome.String()
	},
	DescribeState: func(state any) string {
		if s := state.(kvState); s.exists {
			return s.value
		}
		return "absent"
	},
}).ToModel()

// kvStep is what in does to s: the next state, the answer a client gets,
// and whether the state changes.
func kvStep(s kvState, in kvInput) (kvState, kvOutput, bool) {
	switch in.op {
	case opCreate:
		if s.exists {
			return s, kvOutput{outcome: outAlreadyExists}, false
		}
		return kvState{exists: true, value: in.value}, kvOutput{outcome: outOK}, true
	case opUpdate:
		if !s.exists {
			return s, kvOutput{outcome: outNotFound}, false
		}
		return kvState{exists: true, value: in.value}, kvOutput{outcome: outOK}, s.value != in.value
	case opDelete:
		if !s.exists {
			return s, kvOutput{outcome: outNotFound}, false
		}
		return kvState{}, kvOutput{outcome: outOK}, true
	default: // reads
		return s, kvOutput{outcome: outOK, found: s.exists, value: s.value}, false
	}
}

// watchEvent is one event a watcher saw: its type, key, the object's
// resourceVersion and value.
type watchEvent struct {
	typ   string // ADDED, MODIFIED, DELETED
	key   string
	rv    uint64
	value string
}

// watchRecord is what one watcher saw, in order, and where it had to list
// again because the history it wanted was compacted (a 410): events
// before and after a gap need not be contiguous.
type watchRecord struct {
	name   string
	events []watchEvent
	// gaps[i] says that a gap came before events[i]; its key is the index.
	gaps map[int]bool
}

// ackedWrite is a create or update the server acknowledged, with the
// resourceVersion of the object it answered.
type ackedWrite struct {
	key, value string
	rv         uint64
}

// checkWatches checks what the watchers saw, as etcd's robustness tests
// check watches, and returns one line per violation:
//   - ordered: within a watcher, resourceVersions strictly increase, across
//     its reconnects too (each resumed from the last one seen);
//   - atomic and consistent: two watchers that saw an event at the same
//     resourceVersion saw the same event;
//   - reliable: a watcher saw every acknowledged write whose
//     resourceVersion falls between two events it saw with no gap between;
//   - true: every event's value was written to its key by some client (no
//     invented data), and an acknowledged write's event has its value.
func checkWatches(records []watchRecord, acked []ackedWrite, written map[string]map[string]bool) []string {
	var bad []string
	report := func(format string, args ...any) {
		if len(bad) < 50 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	ackedAt := map[uint64]ackedWrite{}
	for _, w := range acked {
		ackedAt[w.rv] = w
	}
	seen := map[uint64]watchEvent{}
	seenBy := map[uint64]string{}
	for _, r := range records {
		for i, e := range r.events {
			if i > 0 && e.rv <= r.events[i-1].rv {
				report("%s: event %s %s at rv %d after rv %d", r.name, e.typ, e.key, e.rv, r.events[i-1].rv)
			}
			if e.typ != "DELETED" && !written[e.key][e.value] {
				report("%s: %s %s at rv %d has value %q, which no client wrote to it", r.name, e.typ, e.key, e.rv, e.value)
			}
			if w, ok := ackedAt[e.rv]; ok && (w.key != e.key || (e.typ != "DELETED" && w.value != e.value)) {
				report("%s: %s %s=%s at rv %d, but the write acknowledged at that rv was %s=%s", r.name, e.typ, e.key, e.value, e.rv, w.key, w.value)
			}
			if other, ok := seen[e.rv]; ok && other != e {
				report("%s saw %+v at rv %d, %s saw %+v", r.name, e, e.rv, seenBy[e.rv], other)
			} else if !ok {
				seen[e.rv], seenBy[e.rv] = e, r.name
			}
		}
		// Reliable: between consecutive events without a gap, every
		// acknowledged write in that span of resourceVersions.
		rvs := make([]uint64, 0, len(r.events))
		for _, e := range r.events {
			rvs = append(rvs, e.rv)
		}
		for _, w := range acked {
			i, found := slices.BinarySearch(rvs, w.rv)
			if found || i == 0 || i == len(rvs) || r.gaps[i] {
				continue
			}
			report("%s missed the acknowledged write %s=%s at rv %d (between rv %d and %d)", r.name, w.key, w.value, w.rv, rvs[i-1], rvs[i])
		}
	}
	return bad
}

// TestChaosChecker checks the checkers on histories with a known answer,
// so that a chaos run that passes means something.
func TestChaosChecker(t *testing.T) {
	t.Parallel()
	op := func(client int, call, ret int64, in kvInput, out kvOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	create := func(k, v string) kvInput { return kvInput{op: opCreate, key: k, value: v} }
	get := kvInput{op: opGet, key: "a"}
	del := kvInput{op: opDelete, key: "a"}
	okOut, absent := kvOutput{outcome: outOK}, kvOutput{outcome: outOK}
	read := func(v string) kvOutput { return kvOutput{outcome: outOK, found: true, value: v} }
	never := int64(1 << 62)
	for _, tc := range []struct {
		name    string
		history []porcupine.Operation
		want    porcupine.CheckResult
	}{
		{"acknowledged create then read", []porcupine.Operation{op(0, 0, 1, create("a", "1"), okOut), op(1, 2, 3, get, read("1"))}, porcupine.Ok},
		{"acknowledged create lost", []porcupine.Operation{op(0, 0, 1, create("a", "1"), okOut), op(1, 2, 3, get, absent)}, porcupine.Illegal},
		{"delete came back", []porcupine.Operation{
			op(0, 0, 1, create("a", "1"), okOut), op(0, 2, 3, del, okOut), op(1, 4, 5, get, read("1"))}, porcupine.Illegal},
		{"unknown create seen later", []porcupine.Operation{
			op(0, 0, never, create("a", "1"), kvOutput{}), op(1, 2, 3, get, read("1"))}, porcupine.Ok},
		{"unknown create not seen", []porcupine.Operation{
			op(0, 0, never, create("a", "1"), kvOutput{}), op(1, 2, 3, get, absent)}, porcupine.Ok},
		{"unknown create seen, then gone", []porcupine.Operation{
			op(0, 0, never, create("a", "1"), kvOutput{}), op(1, 2, 3, get, read("1")), op(1, 4, 5, get, absent)}, porcupine.Illegal},
		{"stale read", []porcupine.Operation{
			op(0, 0, 1, create("a", "1"), okOut), op(0, 2, 3, kvInput{op: opUpdate, key: "a", value: "2"}, okOut), op(1, 4, 5, kvInput{op: opList, key: "a"}, read("1"))}, porcupine.Illegal},
	} {
		if got := porcupine.CheckOperationsTimeout(kvModel, tc.history, 0); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}

	written := map[string]map[string]bool{"a": {"1": true, "2": true}}
	acked := []ackedWrite{{"a", "1", 10}, {"a", "2", 12}}
	good := watchRecord{name: "w", events: []watchEvent{{"ADDED", "a", 10, "1"}, {"MODIFIED", "a", 12, "2"}}}
	if bad := checkWatches([]watchRecord{good, good}, acked, written); len(bad) > 0 {
		t.Errorf("a consistent watch history: %v", bad)
	}
	for name, r := range map[string]watchRecord{
		"out of order": {name: "w", events: []watchEvent{{"MODIFIED", "a", 12, "2"}, {"ADDED", "a", 10, "1"}}},
		"invented":     {name: "w", events: []watchEvent{{"ADDED", "a", 10, "1"}, {"MODIFIED", "a", 11, "9"}, {"MODIFIED", "a", 12, "2"}}},
		"missed":       {name: "w", events: []watchEvent{{"ADDED", "a", 9, "1"}, {"MODIFIED", "a", 13, "2"}}},
		"disagrees":    {name: "v", events: []watchEvent{{"ADDED", "a", 10, "2"}}},
	} {
		if bad := checkWatches([]watchRecord{good, r}, acked, written); len(bad) == 0 {
			t.Errorf("%s: no violation found", name)
		}
	}
	gap := watchRecord{name: "w", events: []watchEvent{{"ADDED", "a", 9, "1"}, {"MODIFIED", "a", 13, "2"}}, gaps: map[int]bool{1: true}}
	if bad := checkWatches([]watchRecord{gap}, acked, written); len(bad) > 0 {
		t.Errorf("a watch that listed again across the writes: %v", bad)
	}
}
