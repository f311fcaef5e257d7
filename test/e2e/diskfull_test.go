package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gcp-project/gcp/test/poll"
	"github.com/gcp-project/gcp/test/smalldisk"
)

// diskFullMinFree is the --min-free-disk of the tests below: a 96 MiB
// tmpfs holds etcd's first 64 MB WAL segment and not much more.
const (
	diskFullMinFree = 8 << 20
	// diskFullHeadroom is how much more than diskFullMinFree the filler
	// leaves free: a few hundred 20 KB ConfigMaps.
	diskFullHeadroom = 2 << 20
)

// fillWithConfigMaps creates 20 KB ConfigMaps in the default namespace
// until a create fails, and returns the names of those acknowledged and
// the error that ended it.
func fillWithConfigMaps(t *testing.T, client kubernetes.Interface, prefix string) ([]string, error) {
	t.Helper()
	value := strings.Repeat("x", 20<<10)
	var acked []string
	for i := 0; i < 5000; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i)}, Data: map[string]string{"v": value}}
		start := time.Now()
		_, err := client.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{})
		if took := time.Since(start); took > 20*time.Second {
			t.Fatalf("a write against a full disk took %v", took)
		}
		if err != nil {
			return acked, err
		}
		acked = append(acked, cm.Name)
	}
	t.Fatalf("5000 ConfigMaps of 20 KB fitted in a 96 MiB file system")
	return nil, nil
}

// checkDiskFull holds a control plane to what a full disk must not do:
// writes were refused with 507 and etcd's NOSPACE error, and refusing
// them does not grow etcd's WAL on the disk that is running out (clients
// retry); reads and deletes go on; readyz (which checks /readyz) passes; after the filler
// is removed, writes are taken again with no restart and every
// acknowledged ConfigMap is there. alive reports whether the processes
// still run.
func checkDiskFull(t *testing.T, client kubernetes.Interface, disk string, acked []string, refused error, filler string, alive func() error, readyz func()) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(refused, &status) || status.Status().Code != 507 || !strings.Contains(refused.Error(), "database space exceeded") {
		t.Fatalf("after %d ConfigMaps of 20 KB the write failed, but not with 507 for space (alive: %v): %v", len(acked), alive(), refused)
	}
	if err := alive(); err != nil {
		t.Fatalf("refusing writes: %v", err)
	}
	readyz()
	ctx := context.Background()
	cms := client.CoreV1().ConfigMaps("default")

	wal := smalldisk.WALWritten(t, disk)
	value := strings.Repeat("x", 20<<10)
	const retries = 50
	for i := 0; i < retries; i++ {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("retry-%d", i)}, Data: map[string]string{"v": value}}, metav1.CreateOptions{})
		if !errors.As(err, &status) || status.Status().Code != 507 {
			t.Fatalf("create %d while the disk is low: %v, want 507", i, err)
		}
	}
	// Far below one refused ConfigMap's 20 KB each.
	if grew := smalldisk.WALWritten(t, disk) - wal; grew > 64<<10 {
		t.Fatalf("etcd's WAL grew by %d bytes across %d refused creates of 20 KB", grew, retries)
	}
	if _, err := cms.Get(ctx, acked[0], metav1.GetOptions{}); err != nil {
		t.Fatalf("read while the disk is low: %v", err)
	}
	if err := cms.Delete(ctx, acked[len(acked)-1], metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete while the disk is low: %v", err)
	}
	acked = acked[:len(acked)-1]

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-free"}}, metav1.CreateOptions{})
		return err
	})
	if err := alive(); err != nil {
		t.Fatal(err)
	}
	for _, name := range acked {
		if _, err := cms.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("acknowledged ConfigMap %s after space was freed: %v", name, err)
		}
	}
}

// TestDiskFullAllInOne runs `gcp start` on a small file system and fills
// it: before etcd's data dir runs out of space, writes get 507 (etcd's
// NOSPACE alarm, raised by the member for --min-free-disk), reads and
// deletes go on, /readyz names the disk, and once space is freed writes
// come back with no restart and nothing acknowledged lost.
func TestDiskFullAllInOne(t *testing.T) {
	t.Parallel()
	disk := smalldisk.Mount(t, 96<<20)
	a := startAllInOne(t, filepath.Join(disk, "gcp"), "--min-free-disk", fmt.Sprint(diskFullMinFree))
	filler := smalldisk.FillTo(t, disk, diskFullMinFree+diskFullHeadroom)
	client := crashClient(t, a.kubeconfig())
	alive := func() error {
		select {
		case err := <-a.exited:
			a.exited <- err
			return fmt.Errorf("gcp start exited: %v\n%s", err, a.log)
		default:
			return nil
		}
	}

	acked, refused := fillWithConfigMaps(t, client, "fill")
	checkDiskFull(t, client, disk, acked, refused, filler, alive, func() {
		a.eventually(t, "readyz names the low disk", 10*time.Second, func(out string, err error) bool {
			return err != nil && strings.Contains(out, "[-]etcd-free-disk failed") && strings.Contains(out, "[-]etcd-alarm-nospace failed")
		}, "get", "--raw", "/readyz?verbose")
	})
	a.eventually(t, "readyz once space is freed", 10*time.Second, func(_ string, err error) bool { return err == nil }, "get", "--raw", "/readyz")
}

// TestDiskFullSplit is TestDiskFullAllInOne for the split shape: one
// `gcp etcd` member whose --data-dir is on the small file system, with a
// `gcp apiserver` in front; /readyz names the NOSPACE alarm, which is all
// the API server sees.
func TestDiskFullSplit(t *testing.T) {
	t.Parallel()
	disk := smalldisk.Mount(t, 96<<20)
	c := startEtcdCluster(&haCluster{t: t, base: t.TempDir(), dataRoot: disk,
		memberFlags: []string{"--min-free-disk", fmt.Sprint(diskFullMinFree)}}, 1)
	a := &allInOne{t: t, binary: gcpBinary, dataDir: c.base}
	server := c.startAPIServer(a)
	mustGCP(t, "kubectl", "--kubeconfig", a.kubeconfig(), "config", "set-cluster", "gcp", "--server", server)
	filler := smalldisk.FillTo(t, disk, diskFullMinFree+diskFullHeadroom)
	client := crashClient(t, a.kubeconfig())
	alive := func() error {
		for name, p := range map[string]*process{"gcp etcd": c.members[0].proc, "gcp apiserver": c.apiservers[0]} {
			select {
			case <-p.done:
				return fmt.Errorf("%s exited:\n%s", name, p.log)
			default:
			}
		}
		return nil
	}

	acked, refused := fillWithConfigMaps(t, client, "fill")
	checkDiskFull(t, client, disk, acked, refused, filler, alive, func() {
		a.eventually(t, "readyz names the NOSPACE alarm", 10*time.Second, func(out string, err error) bool {
			return err != nil && strings.Contains(out, "[-]etcd-alarm-nospace failed")
		}, "get", "--raw", "/readyz?verbose")
		if out, _ := runGCP(t, "etcd", "alarm", "list", "--etcd-servers", c.etcdURLs,
			"--etcd-cafile", c.p("etcd/ca.crt"), "--etcd-certfile", c.p("apiserver-etcd-client.crt"), "--etcd-keyfile", c.p("apiserver-etcd-client.key")); !strings.Contains(out, "NOSPACE") {
			t.Errorf("gcp etcd alarm list while the disk is low:\n%s", out)
		}
	})
	a.eventually(t, "readyz once space is freed", 10*time.Second, func(_ string, err error) bool { return err == nil }, "get", "--raw", "/readyz")
	if out, _ := runGCP(t, "etcd", "alarm", "list", "--etcd-servers", c.etcdURLs,
		"--etcd-cafile", c.p("etcd/ca.crt"), "--etcd-certfile", c.p("apiserver-etcd-client.crt"), "--etcd-keyfile", c.p("apiserver-etcd-client.key")); strings.Contains(out, "NOSPACE") {
		t.Errorf("gcp etcd alarm list once space is freed:\n%s", out)
	}
}
