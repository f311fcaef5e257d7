package configfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxSize is the largest file Read reads: 1 MiB. An AuthenticationConfiguration
// with a hundred issuers, each with its CA bundle inline, is about 200 KiB;
// a file of hundreds of MiB would cost seconds of CPU and its size in RSS
// at every reload.
const MaxSize = 1 << 20

// Read reads a file the server reads while it runs (a configuration file,
// a certificate): only a regular file (after symlinks), opened without
// blocking, so that a FIFO or a device at path is an error at once rather
// than a read that never returns or never ends, and of at most MaxSize
// bytes.
func Read(path string) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO for reading waits for a writer without it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, kind(info.Mode()))
	}
	if info.Size() > MaxSize {
		return nil, tooLarge(path)
	}
	// The file can grow between the Stat and the read.
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSize {
		return nil, tooLarge(path)
	}
	return data, nil
}

func tooLarge(path string) error {
	return fmt.Errorf("%s is larger than %d bytes, more than any such file needs", path, MaxSize)
}

// kind names a file mode that is not a regular file's.
func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}
