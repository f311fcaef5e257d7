package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// TestAggregatedSampleAPIServer registers a real aggregated API server,
// k8s.io/sample-apiserver at the k8s.io version gcp is built on (built
// from test/e2e/testdata/sampleapiserver, a module of its own), run as a
// process on loopback and reached through ConfigMap
// kube-system/service-addresses, as docs/aggregation.md says: its
// APIService becomes Available, kubectl gets, creates, watches and
// explains flunders through gcp, and the condition turns False when the
// process is killed and True again when it is back.
func TestAggregatedSampleAPIServer(t *testing.T) {
	t.Parallel()
	wardle := filepath.Join(t.TempDir(), "wardle")
	goIn(t, filepath.Join("testdata", "sampleapiserver"), "build", "-o", wardle, "k8s.io/sample-apiserver")

	a := startAllInOne(t, t.TempDir())
	dir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("api.wardle.svc", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	runWardle := func() *process {
		// Its own etcd prefix in gcp's etcd, through the data dir's socket;
		// the admin kubeconfig for delegated authn/z and its informers.
		return startBinaryProcess(t, wardle,
			"--secure-port", strconv.Itoa(port), "--bind-address", "127.0.0.1",
			"--tls-cert-file", certFile, "--tls-private-key-file", keyFile,
			"--etcd-servers", "unix://"+filepath.Join(a.dataDir, "etcd.sock"),
			"--kubeconfig", a.kubeconfig(), "--authentication-kubeconfig", a.kubeconfig(), "--authorization-kubeconfig", a.kubeconfig())
	}
	backend := runWardle()
	killWardle := func() {
		_ = backend.cmd.Process.Signal(syscall.SIGKILL)
		<-backend.done
	}

	a.kubectl("create", "configmap", "service-addresses", "-n", "kube-system",
		"--from-literal=api.wardle.443=127.0.0.1:"+strconv.Itoa(port))
	a.apply(fmt.Sprintf(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.wardle.example.com}
spec:
  group: wardle.example.com
  version: v1alpha1
  service: {namespace: wardle, name: api, port: 443}
  caBundle: %s
  groupPriorityMinimum: 1000
  versionPriority: 15
`, base64.StdEncoding.EncodeToString(certPEM)), "apply", "-f", "-")
	available := func(status string) {
		t.Helper()
		a.eventually(t, "APIService Available="+status, 90*time.Second, func(out string, err error) bool {
			return err == nil && strings.HasPrefix(out, status)
		}, "get", "apiservice", "v1alpha1.wardle.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].reason}`)
	}
	available("True")
	a.kubectl("wait", "--for=condition=Available", "apiservice/v1alpha1.wardle.example.com", "--timeout=30s")

	a.eventually(t, "flunders in discovery", 30*time.Second, func(out string, err error) bool {
		return err == nil && strings.Contains(out, "flunders")
	}, "api-resources", "--api-group=wardle.example.com", "-o", "name")
	a.apply(`apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata: {name: f1, namespace: default}
spec: {reference: f0}
`, "apply", "-f", "-")
	mustContain(t, a.kubectl("get", "flunders", "-n", "default"), "f1")
	mustContain(t, a.kubectl("get", "--raw", "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders?watch=1&timeoutSeconds=1"), `"type":"ADDED"`, `"name":"f1"`)
	mustContain(t, a.kubectl("explain", "flunder.spec"), "reference")

	a.kubectl("create", "namespace", "doomed")
	a.apply(`apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata: {name: f2, namespace: doomed}
spec: {reference: f0}
`, "apply", "-f", "-")

	// SIGKILL the backend: the next check turns the APIService False.
	killWardle()
	available("False FailedDiscoveryCheck")

	// A namespace with flunders cannot be emptied while their group is
	// gone: it stays Terminating and says which APIService and why.
	a.kubectl("delete", "namespace", "doomed", "--wait=false")
	a.eventually(t, "doomed says why it waits", 60*time.Second, func(out string, err error) bool {
		return err == nil && strings.Contains(out, "APIService v1alpha1.wardle.example.com is not Available: FailedDiscoveryCheck")
	}, "get", "namespace", "doomed", "-o", `jsonpath={.status.conditions[?(@.type=="NamespaceDeletionDiscoveryFailure")].message}`)
	// The garbage collector goes on for everything else meanwhile.
	a.kubectl("create", "configmap", "owner")
	uid := strings.TrimSpace(a.kubectl("get", "configmap", "owner", "-o", "jsonpath={.metadata.uid}"))
	a.apply(fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: %s}]
`, uid), "apply", "-f", "-")
	a.kubectl("delete", "configmap", "owner")
	a.eventually(t, "dependent garbage-collected while wardle is down", 60*time.Second, notFound, "get", "configmap", "dependent")
	// And the quota controller counts.
	a.kubectl("create", "quota", "cms", "--hard=count/configmaps=100")
	a.eventually(t, "quota usage computed while wardle is down", 60*time.Second, func(out string, err error) bool {
		return err == nil && out != ""
	}, "get", "resourcequota", "cms", "-o", "jsonpath={.status.used.count/configmaps}")

	// Back: Available again, and the namespace finishes at once (the
	// APIService change retries it), its flunder deleted.
	backend = runWardle()
	available("True")
	back := time.Now()
	a.eventually(t, "doomed deleted once wardle is back", 30*time.Second, notFound, "get", "namespace", "doomed")
	t.Logf("namespace deleted %v after the APIService was Available again", time.Since(back).Round(100*time.Millisecond))
	mustContain(t, a.kubectl("get", "flunders", "-n", "default"), "f1")

	// Down again, and this time the APIService goes: the namespace waiting
	// on it finishes at once (its flunders stay in wardle's storage, as
	// upstream leaves them).
	a.kubectl("create", "namespace", "doomed2")
	a.apply(strings.Replace(`apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata: {name: f3, namespace: NS}
spec: {reference: f0}
`, "NS", "doomed2", 1), "apply", "-f", "-")
	killWardle()
	available("False FailedDiscoveryCheck")
	a.kubectl("delete", "namespace", "doomed2", "--wait=false")
	a.eventually(t, "doomed2 says why it waits", 60*time.Second, func(out string, err error) bool {
		return err == nil && strings.Contains(out, "APIService v1alpha1.wardle.example.com is not Available")
	}, "get", "namespace", "doomed2", "-o", `jsonpath={.status.conditions[?(@.type=="NamespaceDeletionDiscoveryFailure")].message}`)
	a.kubectl("delete", "apiservice", "v1alpha1.wardle.example.com")
	removed := time.Now()
	a.eventually(t, "doomed2 deleted once the APIService is gone", 30*time.Second, notFound, "get", "namespace", "doomed2")
	t.Logf("namespace deleted %v after the APIService was removed", time.Since(removed).Round(100*time.Millisecond))
}
