package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestCrashLoop SIGKILLs gcp start at random points while a writer
// creates ConfigMaps and updates one with resourceVersion preconditions,
// restarts it on the same data dir, and checks after every round that
// every acknowledged create is there with its value, that the updated
// object holds its last acknowledged value (or the one write whose answer
// the kill cut off), and that resource versions never go back.
// GCP_CRASH_ROUNDS sets the rounds (3 by default, as CI runs it).
func TestCrashLoop(t *testing.T) {
	t.Parallel()
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("GCP_CRASH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	acked := map[string]string{} // configmap → value, every acknowledged create
	var counterAcked, counterAttempted int
	var maxRV uint64
	next := 0
	for round := range rounds {
		a := startAllInOne(t, dir)
		client := crashClient(t, a.kubeconfig())
		ctx := context.Background()
		cms := client.CoreV1().ConfigMaps("default")

		// What the last round's writes left must all be there.
		for name, value := range acked {
			cm, err := cms.Get(ctx, name, metav1.GetOptions{})
			if err != nil || cm.Data["v"] != value {
				t.Fatalf("round %d: acknowledged %s=%s: %v %v", round, name, value, cm, err)
			}
		}
		counter, err := cms.Get(ctx, "counter", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && round == 0:
			if counter, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "counter"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case err != nil:
			t.Fatalf("round %d: counter: %v", round, err)
		default:
			n, _ := strconv.Atoi(counter.Data["n"])
			if n != counterAcked && n != counterAttempted {
				t.Fatalf("round %d: counter is %d; last acknowledged %d, last attempted %d", round, n, counterAcked, counterAttempted)
			}
			counterAcked, counterAttempted = n, n
		}
		// The store's revision (a consistent list's resourceVersion) is at
		// least every resourceVersion acknowledged before the kill.
		list, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rv, err := strconv.ParseUint(list.ResourceVersion, 10, 64); err != nil || rv < maxRV {
			t.Fatalf("round %d: resourceVersion went back from %d to %s (%v)", round, maxRV, list.ResourceVersion, err)
		}

		// Write until a random moment, then SIGKILL.
		killAt := time.Now().Add(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for time.Now().Before(killAt.Add(2 * time.Second)) {
				name := fmt.Sprintf("c-%d", next)
				value := strconv.Itoa(next)
				next++
				created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": value}}, metav1.CreateOptions{})
				if err != nil {
					return // the kill
				}
				acked[name] = value
				maxRV = max(maxRV, resourceVersion(t, created))
				counterAttempted = counterAcked + 1
				counter.Data["n"] = strconv.Itoa(counterAttempted)
				updated, err := cms.Update(ctx, counter, metav1.UpdateOptions{})
				if err != nil {
					return
				}
				counter, counterAcked = updated, counterAttempted
				maxRV = max(maxRV, resourceVersion(t, updated))
			}
		}()
		time.Sleep(time.Until(killAt))
		_ = a.cmd.Process.Signal(syscall.SIGKILL)
		<-done
		if err := <-a.exited; err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("round %d: gcp start after SIGKILL: %v", round, err)
		}
		a.exited <- nil
		t.Logf("round %d: killed after %d creates so far", round, len(acked))
	}
	a := startAllInOne(t, dir)
	client := crashClient(t, a.kubeconfig())
	for name, value := range acked {
		cm, err := client.CoreV1().ConfigMaps("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || cm.Data["v"] != value {
			t.Fatalf("after %d rounds: acknowledged %s=%s: %v %v", rounds, name, value, cm, err)
		}
	}
}

func crashClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	return kubernetes.NewForConfigOrDie(cfg)
}

// resourceVersion parses cm's resource version; it may run in the
// writer's goroutine, so a bad one is an error, not a Fatal.
func resourceVersion(t *testing.T, cm *corev1.ConfigMap) uint64 {
	t.Helper()
	rv, err := strconv.ParseUint(cm.ResourceVersion, 10, 64)
	if err != nil {
		t.Errorf("resourceVersion %q: %v", cm.ResourceVersion, err)
	}
	return rv
}
