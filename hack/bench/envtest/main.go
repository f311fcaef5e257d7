// Command envtestbench measures gcp's pkg/testserver side by side with
// controller-runtime's envtest (kube-apiserver and etcd as processes) in
// one run, on one machine: start to a usable client, stop, the CPU of a
// start and stop, and four servers started, used and stopped at once.
//
// It lives in a module of its own so that neither controller-runtime nor
// anything it brings enters gcp's module graph; hack/bench/envtest.sh
// builds the upstream binaries and runs it, and docs/performance.md has
// the latest table. Each side of each round runs in a fresh process (this
// program, re-executed with -side), the sides alternating which goes
// first, so neither inherits the other's heap, goroutines or warm caches.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// sides are the two test servers, in the order of the odd rounds.
var sides = []string{"envtest", "testserver"}

// parallel is how many servers the parallel measurement runs at once.
const parallel = 4

// result is what one side's process measured, printed as JSON.
type result struct {
	Side string
	// Start, Stop and CPU are per start-and-stop, in seconds: Start to a
	// first successful List of namespaces, Stop until the server is gone,
	// CPU the user and system time of this process and its reaped
	// children over both.
	Start, Stop, CPU []float64
	// Parallel is the wall clock of four servers started, used and stopped
	// at once, ParallelCPU its CPU time, in seconds.
	Parallel, ParallelCPU float64
}

func main() {
	side := flag.String("side", "", "measure one side in this process (envtest or testserver) and print JSON; empty runs the rounds")
	assets := flag.String("assets", "", "directory with kube-apiserver and etcd for envtest")
	rounds := flag.Int("rounds", 3, "rounds, each running both sides in a fresh process")
	starts := flag.Int("starts", 3, "starts and stops of one server per side per round")
	flag.Parse()
	if *assets == "" || *rounds < 1 || *starts < 1 || (*side != "" && !slices.Contains(sides, *side)) || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "envtestbench: need -assets DIR, -rounds and -starts of at least 1, -side envtest or testserver, and no arguments")
		os.Exit(1)
	}
	if *side != "" {
		r, err := measure(*side, *assets, *starts)
		if err != nil {
			fmt.Fprintf(os.Stderr, "envtestbench: %s: %v\n", *side, err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	if err := runRounds(*assets, *rounds, *starts); err != nil {
		fmt.Fprintf(os.Stderr, "envtestbench: %v\n", err)
		os.Exit(1)
	}
}

// runRounds runs each side in a child process per round and prints the
// medians and the ratios testserver/envtest.
func runRounds(assets string, rounds, starts int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("load average before: %s\n", loadAvg())
	all := map[string][]result{}
	for round := range rounds {
		order := slices.Clone(sides)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, side := range order {
			var out bytes.Buffer
			cmd := exec.Command(self, "-side", side, "-assets", assets, "-starts", fmt.Sprint(starts))
			cmd.Stdout, cmd.Stderr = &out, os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, side, err)
			}
			var r result
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, side, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %s: start %s stop %s cpu %s parallel %.2f s (cpu %.2f s)\n",
				round+1, side, secs(r.Start), secs(r.Stop), secs(r.CPU), r.Parallel, r.ParallelCPU)
			all[side] = append(all[side], r)
		}
	}
	fmt.Printf("load average after: %s\n\n", loadAvg())

	rows := []struct {
		name string
		get  func(result) []float64
	}{
		{"first start in a process, to a List of namespaces", func(r result) []float64 { return r.Start[:1] }},
		{"start, to a List of namespaces", func(r result) []float64 { return r.Start }},
		{"stop", func(r result) []float64 { return r.Stop }},
		{"CPU of one start and stop", func(r result) []float64 { return r.CPU }},
		{fmt.Sprintf("%d servers at once, started, used and stopped (wall)", parallel), func(r result) []float64 { return []float64{r.Parallel} }},
		{fmt.Sprintf("CPU of the %d at once", parallel), func(r result) []float64 { return []float64{r.ParallelCPU} }},
	}
	fmt.Printf("medians of %d rounds (%d starts per side per round), seconds\n\n", rounds, starts)
	fmt.Println("| measurement | envtest | testserver | testserver/envtest |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, row := range rows {
		m := map[string]float64{}
		for _, side := range sides {
			var v []float64
			for _, r := range all[side] {
				v = append(v, row.get(r)...)
			}
			m[side] = median(v)
		}
		fmt.Printf("| %s | %.2f | %.2f | %.2f |\n", row.name, m["envtest"], m["testserver"], m["testserver"]/m["envtest"])
	}
	return nil
}

// measure starts and stops one server of side starts times, then runs
// the parallel measurement.
func measure(side, assets string, starts int) (result, error) {
	logf.SetLogger(logr.Discard())
	ctx := context.Background()
	start := startTestServer
	if side == "envtest" {
		start = func(context.Context) (*rest.Config, func() error, error) { return startEnvtest(assets) }
	}
	r := result{Side: side}
	for range starts {
		cpu0, t0 := cpuTime(), time.Now()
		_, stop, err := startUsable(ctx, start)
		if err != nil {
			return r, err
		}
		t1 := time.Now()
		if err := stop(); err != nil {
			return r, fmt.Errorf("stop: %w", err)
		}
		r.Start = append(r.Start, t1.Sub(t0).Seconds())
		r.Stop = append(r.Stop, time.Since(t1).Seconds())
		r.CPU = append(r.CPU, (cpuTime() - cpu0).Seconds())
	}

	cpu0, t0 := cpuTime(), time.Now()
	var wg sync.WaitGroup
	errs := make([]error, parallel)
	for i := range parallel {
		wg.Go(func() {
			cs, stop, err := startUsable(ctx, start)
			if err != nil {
				errs[i] = err
				return
			}
			errs[i] = errors.Join(useServer(ctx, cs), stop())
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return r, fmt.Errorf("parallel: %w", err)
	}
	r.Parallel = time.Since(t0).Seconds()
	r.ParallelCPU = (cpuTime() - cpu0).Seconds()
	return r, nil
}

// startUsable starts a server and returns a clientset that has listed
// namespaces successfully: what a test needs before its first step.
func startUsable(ctx context.Context, start func(context.Context) (*rest.Config, func() error, error)) (kubernetes.Interface, func() error, error) {
	cfg, stop, err := start(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("start: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err == nil {
		err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			return err == nil, nil
		})
	}
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("first List of namespaces: %w", err), stop())
	}
	return cs, stop, nil
}

// startTestServer starts gcp's test server: the generic stack without
// controllers, as envtest runs no kube-controller-manager.
func startTestServer(ctx context.Context) (*rest.Config, func() error, error) {
	s, err := testserver.Run(ctx, testserver.Options{Stack: layering.Generic()})
	if err != nil {
		return nil, nil, err
	}
	return s.AdminConfig, s.Stop, nil
}

// startEnvtest starts envtest with the binaries in assets: kube-apiserver
// and etcd processes, each in a temporary directory of its own.
func startEnvtest(assets string) (*rest.Config, func() error, error) {
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, errors.Join(err, env.Stop())
	}
	return cfg, env.Stop, nil
}

// useServer creates and reads a ConfigMap in the default namespace, as a
// test's first step would.
func useServer(ctx context.Context, cs kubernetes.Interface) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "c", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	return nil
}

// cpuTime is the user and system CPU time of this process and of its
// children that have been waited for (envtest waits for the processes it
// stops), so far.
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func secs(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " ")
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
