package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"syscall"
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// TestStartChecksTheDatabaseOnce: `gcp start` walks its etcd database
// once (30–100 ms on a 220 MiB one), not once itself and again as etcd
// starts. The kernel counts for the test (inotify): the file is opened
// read-only and closed by the one check and by the Secrets check that
// reads the file after it, and opened for writing by etcd.
func TestStartChecksTheDatabaseOnce(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	start := func() {
		t.Helper()
		s, err := testserver.Run(context.Background(), testserver.Options{DataDir: dataDir})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	start() // makes the database

	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer func() { _ = syscall.Close(fd) }()
	db := etcd.DatabasePath(allinone.EtcdDir(dataDir))
	if _, err := syscall.InotifyAddWatch(fd, db, syscall.IN_OPEN|syscall.IN_CLOSE_NOWRITE); err != nil {
		t.Fatal(err)
	}
	start()

	var opens, readOnly int
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(fd, buf)
		if errors.Is(err, syscall.EAGAIN) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		events := bytes.NewReader(buf[:n])
		for events.Len() > 0 {
			var e syscall.InotifyEvent
			if err := binary.Read(events, binary.NativeEndian, &e); err != nil {
				t.Fatal(err)
			}
			_, _ = events.Seek(int64(e.Len), 1)
			if e.Mask&syscall.IN_OPEN != 0 {
				opens++
			}
			if e.Mask&syscall.IN_CLOSE_NOWRITE != 0 {
				readOnly++
			}
		}
	}
	if opens != 3 || readOnly != 2 {
		t.Fatalf("a start opened %s %d times, %d of them read-only; want 3 and 2: the database check, the Secrets check, and etcd", db, opens, readOnly)
	}
}
