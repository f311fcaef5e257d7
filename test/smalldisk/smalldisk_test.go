package smalldisk

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFillTo: the filler leaves about the space asked for, and removing
// it gives the space back.
func TestFillTo(t *testing.T) {
	disk := Mount(t, 16<<20)
	filler := FillTo(t, disk, 4<<20)
	if free := Free(t, disk); free < 3<<20 || free > 5<<20 {
		t.Fatalf("%d bytes free after FillTo(4 MiB)", free)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if free := Free(t, disk); free < 15<<20 {
		t.Fatalf("%d bytes free after removing the filler of a 16 MiB disk", free)
	}
}

// TestWALWritten counts what precedes a segment's preallocated zeros, in
// every member's wal directory under the root, and nothing else.
func TestWALWritten(t *testing.T) {
	root := t.TempDir()
	for _, f := range []struct {
		path string
		data []byte
	}{
		{"a/member/wal/0.wal", append([]byte("12345"), make([]byte, 100)...)},
		{"b/member/wal/0.wal", []byte("123")},
		{"b/member/snap/db", []byte("not a WAL")},
		{"c/0.wal", []byte("not in a wal directory")},
	} {
		p := filepath.Join(root, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := WALWritten(t, root); got != 8 {
		t.Fatalf("WALWritten = %d, want 8", got)
	}
}
