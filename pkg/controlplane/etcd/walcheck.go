package etcd

import (
	"fmt"
	"path/filepath"

	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// LostWALError is Start's error when the member's write-ahead log ends
// before what its database has applied: the log was cut short (a copy of
// part of it, a truncated file) or replaced. etcd repairs a log whose last
// record is torn, and would then serve a raft log whose new entries reuse
// indexes the database already applied: it skips them as applied, so its
// own registration in the cluster never takes effect and it is never
// ready. Start stops such a member within a few seconds instead.
type LostWALError struct {
	// Dir is the member's WAL directory.
	Dir string
	// Committed is the raft index the member has committed since it
	// started; Applied the index its database says it has applied.
	Committed, Applied uint64
	// Restore is the command that makes a new data dir from a snapshot;
	// empty means `gcp etcd snapshot restore`. `gcp start` sets its own.
	Restore string
}

// Error says which log lost what and what to do about it, in one line.
func (e *LostWALError) Error() string {
	return fmt.Sprintf("the etcd write-ahead log in %s ends before what the database has applied "+
		"(raft index %d, the database's %d): it was cut short or replaced; restore the data dir from a snapshot with %s",
		e.Dir, e.Committed, e.Applied, restoreCommand(e.Restore))
}

// lostWALChecks is how many checks a second apart must find the log behind
// before Start gives up: a member that just got a leader may not have
// committed its first entry yet.
const lostWALChecks = 3

// walDir is where a member keeps its write-ahead log in its data dir.
func walDir(dataDir string) string { return filepath.Join(dataDir, "member", "wal") }

// lostWAL returns a *LostWALError if s leads its cluster (alone, as gcp
// start's member does, or elected by a quorum) and has committed less than
// its database applied before it started. A leader whose log is whole
// commits more than that at once: its log holds every entry the database
// applied, and it commits an entry of its own on being elected. A follower
// is not judged: its leader sends it what its log lacks, and its committed
// index moves only when an entry reaches it, which a slow cluster may
// delay.
func lostWAL(s *etcdserver.EtcdServer, dataDir string) *LostWALError {
	if s.Leader() != s.MemberID() {
		return nil
	}
	applied, _ := schema.ReadConsistentIndex(s.Backend().ReadTx())
	if committed := s.CommittedIndex(); committed < applied {
		return &LostWALError{Dir: walDir(dataDir), Committed: committed, Applied: applied}
	}
	return nil
}
