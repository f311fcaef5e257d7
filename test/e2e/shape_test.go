package e2e

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// controlPlane is what a kubectl-driven test needs of gcp, whatever its
// shape: kubectl with the admin's kubeconfig against the API server, and
// the directory that holds the kubeconfig and the PKI (pki/ca.crt).
type controlPlane interface {
	dir() string
	kubeconfig() string
	kubectl(args ...string) string
	kubectlErr(args ...string) (string, error)
	kubectlEnv(env []string, stdin string, args ...string) (string, error)
	apply(manifest string, args ...string) string
	eventually(t *testing.T, what string, timeout time.Duration, check func(out string, err error) bool, args ...string)
}

// shapes are the ways gcp's parts run that every kubectl-driven test runs
// against: `gcp start`, and `gcp etcd`, `gcp apiserver` and `gcp
// controllers` as separate processes from the PKI of `gcp pki init`.
var shapes = []struct {
	name  string
	start func(t *testing.T) controlPlane
}{
	{"all-in-one", func(t *testing.T) controlPlane { return startAllInOne(t, t.TempDir()) }},
	{"split", func(t *testing.T) controlPlane { return startSplit(t) }},
}

// forEachShape runs test as a parallel subtest against each shape.
func forEachShape(t *testing.T, test func(t *testing.T, cp controlPlane)) {
	t.Helper()
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			t.Parallel()
			test(t, shape.start(t))
		})
	}
}

// split is the split shape: one `gcp etcd` member with client mTLS, a
// `gcp apiserver` against it and a `gcp controllers`, each a process;
// the admin kubeconfig in dir() points at the API server.
type split struct {
	*allInOne // kubectl with dir()/admin.kubeconfig; no `gcp start` runs
	cluster   *haCluster
	// controllersURL is where `gcp controllers` serves /healthz.
	controllersURL string
}

// startSplitAPIServer starts the split shape's etcd and API server,
// points the admin's and the controllers' kubeconfigs at that API server
// and returns the cluster, the admin's side and the controllers'
// kubeconfig; starting the controllers is the caller's.
func startSplitAPIServer(t *testing.T) (*haCluster, *allInOne, string) {
	t.Helper()
	c := newEtcdCluster(t, 1)
	a := &allInOne{t: t, binary: gcpBinary, dataDir: c.base}
	server := c.startAPIServer(a)
	controllersKubeconfig := filepath.Join(c.base, "controllers.kubeconfig")
	for _, kubeconfig := range []string{a.kubeconfig(), controllersKubeconfig} {
		mustGCP(t, "kubectl", "--kubeconfig", kubeconfig, "config", "set-cluster", "gcp", "--server", server)
	}
	return c, a, controllersKubeconfig
}

// startSplit starts the split shape and returns it once the API server is
// ready and the controllers run.
func startSplit(t *testing.T) *split {
	t.Helper()
	c, a, controllersKubeconfig := startSplitAPIServer(t)
	controllersPort := freePort(t)
	startProcess(t, "controllers", "--kubeconfig", controllersKubeconfig,
		"--cluster-signing-cert-file", c.p("ca.crt"), "--cluster-signing-key-file", c.p("ca.key"),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(controllersPort))
	// The controllers run once kube-root-ca.crt is published.
	a.eventually(t, "controllers of the split shape", 60*time.Second,
		func(_ string, err error) bool { return err == nil }, "get", "configmap", "kube-root-ca.crt", "-n", "default")
	return &split{allInOne: a, cluster: c, controllersURL: "https://127.0.0.1:" + strconv.Itoa(controllersPort)}
}

func (a *allInOne) dir() string { return a.dataDir }
