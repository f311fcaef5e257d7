package testserver

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
)

// TestServiceAccountKeyMadeOnce: servers of one test binary sign service
// account tokens with one key, made once, yet a token one server issued
// works there and is refused by the other (its CA and issuer are its own).
func TestServiceAccountKeyMadeOnce(t *testing.T) {
	t.Parallel()
	a, b := Start(t, Options{}), Start(t, Options{})
	keyA, err := os.ReadFile(a.PKI.ServiceAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := os.ReadFile(b.PKI.ServiceAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(keyA, keyB) {
		t.Fatal("each server made its own service account key")
	}
	if key, err := keyutil.ParsePrivateKeyPEM(keyA); err != nil {
		t.Fatal(err)
	} else if _, ok := key.(*ecdsa.PrivateKey); !ok {
		t.Errorf("the service account key is a %T, want ECDSA (an RSA key takes 50-150 ms to make)", key)
	}

	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}
	if _, err := a.Client.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := a.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withToken := func(s *Server) kubernetes.Interface {
		cfg := rest.AnonymousClientConfig(s.AdminConfig)
		cfg.BearerToken = tr.Status.Token
		return kubernetes.NewForConfigOrDie(cfg)
	}
	// Authenticated, not authorized: 403 names the service account.
	_, err = withToken(a).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("the token at the server that issued it: got %v, want 403", err)
	}
	_, err = withToken(b).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("the token at another server: got %v, want 401", err)
	}
}

// TestFailedStartLeavesDataDirEmpty: a start that fails, on a flag the
// options check or one only the API server's configuration does, leaves a
// data dir of the caller's as it found it, empty or not, without the
// service account key the test server wrote there for pki.Ensure.
func TestFailedStartLeavesDataDirEmpty(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		apiServer func(*options.Options)
		want      string
	}{
		{"options", func(o *options.Options) {
			o.Admission.EnablePlugins = append(o.Admission.EnablePlugins, "NoSuchPlugin")
		}, "NoSuchPlugin"},
		{"configuration", func(o *options.Options) {
			o.APIEnablement.RuntimeConfig = map[string]string{"flowcontrol.apiserver.k8s.io/v1": "false"}
		}, "API Priority and Fairness needs"},
	} {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, a file there: %v", c.name, keep), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				var want []string
				if keep {
					if err := os.WriteFile(filepath.Join(dir, "keep"), nil, 0o600); err != nil {
						t.Fatal(err)
					}
					want = []string{"keep"}
				}
				_, err := Run(context.Background(), Options{DataDir: dir, APIServer: c.apiServer})
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want an error saying %q", err, c.want)
				}
				entries, err := os.ReadDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				if !slices.Equal(names, want) {
					t.Fatalf("a failed start left %v in the data dir, want %v", names, want)
				}
			})
		}
	}
}

// TestFailedStartLeavesEtcdAsItWas: a start in a data dir whose etcd
// member has data, failing on a flag that only the API server's
// configuration checks, leaves the member's files as they were: the
// member, whose start writes to its WAL, starts only after the
// configuration is built (only a new member of an Ephemeral data dir
// starts alongside it: TestEphemeralFailedStartRemovesNewMember).
func TestFailedStartLeavesEtcdAsItWas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Run(context.Background(), Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	before := files(t, allinone.EtcdDir(dir))
	// API Priority and Fairness without its API: apiserver.NewConfig's
	// check, after the options' own.
	_, err = Run(context.Background(), Options{DataDir: dir, APIServer: func(o *options.Options) {
		o.APIEnablement.RuntimeConfig = map[string]string{"flowcontrol.apiserver.k8s.io/v1": "false"}
	}})
	if err == nil || !strings.Contains(err.Error(), "API Priority and Fairness needs") {
		t.Fatalf("got %v, want the error of API Priority and Fairness without its API", err)
	}
	if after := files(t, allinone.EtcdDir(dir)); !maps.Equal(before, after) {
		t.Errorf("a failed start changed the etcd member's files:\nbefore %v\nafter  %v", before, after)
	}
}

// files maps every file under dir to its size and modification time.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[path] = fmt.Sprintf("%d bytes, %s", info.Size(), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
