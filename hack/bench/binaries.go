package main

import (
	"io"
	"os"
	"path/filepath"
)

// copyBinaries copies gcp and the upstream binaries into dir and returns
// the copies' paths. How much of a binary a process maps (its file-backed
// RSS) depends on how the binary's pages came into the page cache: the
// same gcp binary mapped 79 MiB of itself when just written and 104 MiB
// after being read with cat. Writing every binary the same way, right
// before the run, measures both stacks alike.
func copyBinaries(dir, gcp, upstream string) (gcpCopy, upstreamCopy string, err error) {
	upstreamCopy = filepath.Join(dir, "upstream")
	if err := os.MkdirAll(upstreamCopy, 0o700); err != nil {
		return "", "", err
	}
	gcpCopy = filepath.Join(dir, "gcp")
	if err := copyExecutable(gcp, gcpCopy); err != nil {
		return "", "", err
	}
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "etcd"} {
		if err := copyExecutable(filepath.Join(upstream, name), filepath.Join(upstreamCopy, name)); err != nil {
			return "", "", err
		}
	}
	return gcpCopy, upstreamCopy, nil
}

func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
