package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcp-project/gcp/test/poll"
)

// TestChaos runs the split shape (three `gcp etcd` members, two `gcp
// apiserver`, two leader-elected `gcp controllers`) and, while clients
// create, update, delete and read ConfigMaps through both API servers and
// watchers watch them, SIGKILLs, SIGSTOPs and restarts random parts, once
// in a while two etcd members at once (quorum lost). Then, with every part
// back, it checks (issue 28):
//   - the clients' history is linearizable (porcupine, the checker etcd's
//     robustness tests use): no acknowledged write lost, no deleted object
//     back, no read of a state older than one already acknowledged;
//   - the watchers saw one consistent history (checkWatches);
//   - the controllers still work: a namespace deletion completes.
//
// GCP_CHAOS sets how long the faults go on (CI runs 30 s; hack/chaos.sh
// runs longer), GCP_CHAOS_SEED the seed of its random choices (logged), and
// GCP_CHAOS_REPORT a directory for porcupine's visualization of a history
// that is not linearizable (chaos-<seed>.html; the temp dir by default).
func TestChaos(t *testing.T) {
	t.Parallel()
	duration := 30 * time.Second
	if v := os.Getenv("GCP_CHAOS"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("GCP_CHAOS=%q: %v", v, err)
		}
		duration = d
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("GCP_CHAOS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("GCP_CHAOS_SEED=%q: %v", v, err)
		}
		seed = s
	}
	t.Logf("chaos for %v, GCP_CHAOS_SEED=%d", duration, seed)

	ch := newChaosCluster(t)
	defer ch.stopSupervising()
	if _, err := ch.admin(0).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chaosNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	h := &chaosHistory{start: time.Now(), written: map[string]map[string]bool{}}
	ctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	// The watchers outlive the load: they must see its last writes.
	watchers := make([]*chaosWatcher, len(ch.servers))
	for i := range ch.servers {
		watchers[i] = startChaosWatcher(context.Background(), fmt.Sprintf("watcher via apiserver-%d", i), ch.admin(i))
		defer watchers[i].stop()
	}
	// Enough keys that each sees a few dozen operations a run, which keeps
	// porcupine's search short.
	keys := 16 * max(1, int(duration/(30*time.Second)))
	var load sync.WaitGroup
	var pairs []gcPair
	load.Add(1)
	go func() {
		defer load.Done()
		pairs = ch.runGCLoad(ctx, rand.New(rand.NewPCG(seed, 1<<33)))
	}()
	const clients = 4
	for c := range clients {
		load.Add(1)
		go func() {
			defer load.Done()
			ch.runClient(ctx, h, c, keys, rand.New(rand.NewPCG(seed, uint64(c))))
		}()
	}

	faults := ch.injectFaults(duration, rand.New(rand.NewPCG(seed, 1<<32)))
	stopLoad()
	load.Wait()
	t.Logf("faults: %s", faults)
	ch.waitAllReady()

	// With every part back: each key read through both API servers, as
	// the last operations of the history.
	for k := range keys {
		for i := range ch.servers {
			ch.finalRead(h, clients+i, i, chaosKey(k))
		}
	}
	lastRV := h.lastAckedRV()
	stalled := false
	for _, w := range watchers {
		if err := w.waitFor(lastRV, 60*time.Second); err != nil {
			t.Errorf("%s: %v", w.name, err)
			stalled = true
		}
	}
	if stalled {
		ch.diagnoseStall(h, watchers)
	}
	for _, w := range watchers {
		w.stop()
	}

	ops := h.operations()
	acked, unknown := h.counts()
	t.Logf("history: %d operations on %d keys, %d writes acknowledged, %d of unknown outcome", len(ops), keys, acked, unknown)
	result, info := porcupine.CheckOperationsVerbose(kvModel, ops, 2*time.Minute)
	switch result {
	case porcupine.Illegal:
		dir := os.Getenv("GCP_CHAOS_REPORT")
		if dir == "" {
			dir = os.TempDir()
		}
		report := filepath.Join(dir, fmt.Sprintf("chaos-%d.html", seed))
		if f, err := os.Create(report); err == nil {
			_ = porcupine.Visualize(kvModel, info, f)
			_ = f.Close()
		}
		t.Errorf("the history is not linearizable; porcupine's visualization: %s", report)
	case porcupine.Unknown:
		t.Errorf("porcupine did not finish checking the history within 2 minutes")
	}
	records := make([]watchRecord, 0, len(watchers))
	for _, w := range watchers {
		r := w.record()
		t.Logf("%s: %d events, %d relists, %d reconnects", r.name, len(r.events), len(r.gaps), w.reconnects)
		records = append(records, r)
	}
	for _, v := range checkWatches(records, h.ackedWrites(), h.writtenValues()) {
		t.Error(v)
	}
	ch.checkGarbageCollection(pairs)
	ch.checkControllers()
	ch.checkExits()
	ch.mu.Lock()
	t.Logf("errors the clients got, by reason: %v", ch.errs)
	for _, reason := range []metav1.StatusReason{metav1.StatusReasonUnauthorized, metav1.StatusReasonForbidden, metav1.StatusReasonInvalid, metav1.StatusReasonBadRequest} {
		if n := ch.errs[string(reason)]; n > 0 {
			t.Errorf("clients got %d %s errors: an admin's valid request must never get one", n, reason)
		}
	}
	t.Logf("timeline:\n%s", strings.Join(ch.timeline, "\n"))
	ch.mu.Unlock()
}

// chaosNamespace holds the chaos clients' ConfigMaps, which carry the
// chaosLabel so that watchers see only theirs (the controllers write
// kube-root-ca.crt there).
const (
	chaosNamespace = "chaos"
	chaosLabel     = "e2e.gcp.dev/chaos"
)

func chaosKey(i int) string { return fmt.Sprintf("k-%d", i) }

// chaosCluster is the split shape with every part restartable.
type chaosCluster struct {
	t       *testing.T
	start   time.Time
	c       *haCluster
	a       *allInOne // for kubectl with the admin kubeconfig
	servers []string
	apis    []*chaosPart
	ctrls   []*chaosPart
	etcds   []*chaosPart
	clients []*kubernetes.Clientset // admin, one per API server

	// stopSupervising stops restarting parts that exit; the test defers it,
	// so that it runs before the cleanups that stop the parts (a part
	// restarted as it is stopped held a failed test for minutes).
	stopSupervising func()

	mu       sync.Mutex
	timeline []string // faults and exits, as they happened
	errs     map[string]int
}

// chaosPart is one process of the cluster that faults may SIGKILL, SIGSTOP
// and restart, and that the supervisor restarts when it exits on its own.
type chaosPart struct {
	name  string
	start func() *process
	ready func() error

	mu   sync.Mutex
	proc *process
	// held says a fault is being done to it: the supervisor leaves it be.
	held bool
	// exits are the ends of its runs that exited on its own.
	exits []string
	// runs are all its processes, for their logs.
	runs []*process
}

// run starts p (its lock held, or before anyone else sees it).
func (p *chaosPart) run() {
	p.proc = p.start()
	p.runs = append(p.runs, p.proc)
}

// grep returns the lines of all p's runs' logs that contain s.
func (p *chaosPart) grep(s string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var lines []string
	for i, r := range p.runs {
		for _, l := range strings.Split(r.log.String(), "\n") {
			if strings.Contains(l, s) {
				lines = append(lines, fmt.Sprintf("%s run %d: %s", p.name, i, l))
			}
		}
	}
	return lines
}

func newChaosCluster(t *testing.T) *chaosCluster {
	c := newHACluster(t)
	ch := &chaosCluster{t: t, c: c, a: &allInOne{t: t, binary: gcpBinary, dataDir: c.base}, start: time.Now()}
	for i := range c.members {
		ch.etcds = append(ch.etcds, &chaosPart{
			name:  c.members[i].name,
			start: func() *process { c.startMember(i); return c.members[i].proc },
			ready: func() error {
				if body, code := httpGet(c.members[i].metricsURL() + "/readyz"); code != 200 {
					return fmt.Errorf("%s /readyz: %d %s", c.members[i].name, code, body)
				}
				return nil
			},
			proc: c.members[i].proc,
			runs: []*process{c.members[i].proc},
		})
	}
	for i := range 2 {
		port := freePort(t)
		server := fmt.Sprintf("https://127.0.0.1:%d", port)
		ch.servers = append(ch.servers, server)
		cfg, err := clientcmd.BuildConfigFromFlags(server, ch.a.kubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		cfg.QPS, cfg.Burst = -1, 0
		ch.clients = append(ch.clients, kubernetes.NewForConfigOrDie(cfg))
		client := ch.clients[i]
		p := &chaosPart{
			name:  fmt.Sprintf("apiserver-%d", i),
			start: func() *process { return startProcess(t, c.apiserverArgs(port, c.etcdURLs)...) },
			ready: func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
				return err
			},
		}
		p.run()
		ch.apis = append(ch.apis, p)
	}
	for i := range 2 {
		// Each controllers process talks to its own API server.
		kubeconfig := filepath.Join(c.base, fmt.Sprintf("controllers-%d.kubeconfig", i))
		data, err := os.ReadFile(filepath.Join(c.base, "controllers.kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ch.a.kubectl("--kubeconfig", kubeconfig, "config", "set-cluster", "gcp", "--server", ch.servers[i])
		// One serves /healthz, one does not: the two configurations whose
		// lease loss once behaved differently.
		serving := []string{"--secure-port", "0"}
		if i == 1 {
			serving = []string{"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(freePort(t)), "--cert-dir", t.TempDir()}
		}
		p := &chaosPart{
			name: fmt.Sprintf("controllers-%d", i),
			start: func() *process {
				return startProcess(t, append([]string{"controllers", "--kubeconfig", kubeconfig,
					"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms",
					// The garbage collector says what it deletes and orphans.
					"-v", "2"}, serving...)...)
			},
			ready: func() error { return nil },
		}
		ch.ctrls = append(ch.ctrls, p)
	}
	ch.waitAllReady()
	for _, p := range ch.ctrls {
		p.run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	supervised := make(chan struct{})
	go func() { defer close(supervised); ch.supervise(ctx) }()
	ch.stopSupervising = func() { cancel(); <-supervised }
	t.Cleanup(ch.stopSupervising)
	return ch
}

func (ch *chaosCluster) admin(i int) *kubernetes.Clientset { return ch.clients[i] }

func (ch *chaosCluster) parts() []*chaosPart {
	return append(append(append([]*chaosPart{}, ch.etcds...), ch.apis...), ch.ctrls...)
}

// noteError counts the errors clients get by kind, and puts the first of
// each kind on the timeline.
func (ch *chaosCluster) noteError(err error) {
	kind := string(apierrors.ReasonForError(err))
	if code := apierrors.ReasonForError(err); code == metav1.StatusReasonUnknown {
		kind = "transport"
	}
	ch.mu.Lock()
	if ch.errs == nil {
		ch.errs = map[string]int{}
	}
	ch.errs[kind]++
	first := ch.errs[kind] == 1
	ch.mu.Unlock()
	if first {
		ch.logf("first %s error a client got: %v", kind, err)
	}
}

// logf adds a line to the run's timeline, logged at the end.
func (ch *chaosCluster) logf(format string, args ...any) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.timeline = append(ch.timeline, fmt.Sprintf("%8.3fs ", time.Since(ch.start).Seconds())+fmt.Sprintf(format, args...))
}

// supervise restarts a part that exited on its own, as systemd's
// Restart=always or a kubelet would (gcp controllers exits when it loses
// its lease), until ctx is done.
func (ch *chaosCluster) supervise(ctx context.Context) {
	for ctx.Err() == nil {
		for _, p := range ch.parts() {
			p.mu.Lock()
			if !p.held && exited(p.proc) {
				p.exits = append(p.exits, fmt.Sprintf("%v: %s", p.proc.cmd.ProcessState, tail(p.proc.log.String(), 2000)))
				ch.logf("%s exited on its own (%v); restarting it", p.name, p.proc.cmd.ProcessState)
				p.run()
			}
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func exited(p *process) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// checkExits fails the test for a part that exited on its own for any
// reason but the one gcp controllers has: its lease was lost, and a
// supervisor starts it again.
func (ch *chaosCluster) checkExits() {
	for _, p := range ch.parts() {
		p.mu.Lock()
		for _, e := range p.exits {
			if kind(p) == "controllers" && strings.Contains(e, `"leader election lost"`) {
				continue
			}
			ch.t.Errorf("%s exited on its own: %s", p.name, e)
		}
		if len(p.exits) > 0 {
			ch.t.Logf("%s exited on its own %d times", p.name, len(p.exits))
		}
		p.mu.Unlock()
	}
}

// waitAllReady waits until every part is ready, failing the test after a
// minute.
func (ch *chaosCluster) waitAllReady() {
	ch.t.Helper()
	for _, p := range ch.parts() {
		if err := p.waitReady(60 * time.Second); err != nil {
			ch.t.Fatalf("%v\n%s", err, p.current().log)
		}
	}
}

func (p *chaosPart) current() *process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc
}

func (p *chaosPart) waitReady(timeout time.Duration) error {
	if err := poll.Wait(context.Background(), 200*time.Millisecond, timeout, p.ready); err != nil {
		return fmt.Errorf("%s not ready: %w", p.name, err)
	}
	return nil
}

// hold keeps the supervisor away from p while a fault is done to it.
func (p *chaosPart) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
}

// restart starts p again and gives it back to the supervisor.
func (p *chaosPart) restart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.run()
	p.held = false
}

func (p *chaosPart) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = false
}

func (p *chaosPart) kill() {
	proc := p.current()
	_ = proc.cmd.Process.Kill()
	<-proc.done
}

func (p *chaosPart) signal(s syscall.Signal) { _ = p.current().cmd.Process.Signal(s) }

// injectFaults does harm for duration, one fault at a time, each part
// back and ready before the next; it returns what it did.
func (ch *chaosCluster) injectFaults(duration time.Duration, r *rand.Rand) string {
	counts := map[string]int{}
	deadline := time.Now().Add(duration)
	pause := func(min, max time.Duration) time.Duration {
		d := min + time.Duration(r.Int64N(int64(max-min)))
		time.Sleep(d)
		return d
	}
	for time.Now().Before(deadline) {
		pause(500*time.Millisecond, 2*time.Second)
		parts := ch.parts()
		p := parts[r.IntN(len(parts))]
		var back []*chaosPart
		switch n := r.IntN(10); {
		case n < 5:
			counts["SIGKILL "+kind(p)]++
			p.hold()
			p.kill()
			d := pause(200*time.Millisecond, 3*time.Second)
			p.restart()
			ch.logf("SIGKILL %s, restarted after %v", p.name, d.Round(time.Millisecond))
			back = []*chaosPart{p}
		case n < 9:
			counts["SIGSTOP "+kind(p)]++
			p.hold()
			p.signal(syscall.SIGSTOP)
			d := pause(500*time.Millisecond, 5*time.Second)
			p.signal(syscall.SIGCONT)
			p.release()
			ch.logf("SIGSTOP %s for %v", p.name, d.Round(time.Millisecond))
			back = []*chaosPart{p}
		default:
			// Quorum lost for a while: two etcd members down.
			counts["SIGKILL two etcd"]++
			first := r.IntN(len(ch.etcds))
			back = []*chaosPart{ch.etcds[first], ch.etcds[(first+1)%len(ch.etcds)]}
			for _, e := range back {
				e.hold()
				e.kill()
			}
			d := pause(time.Second, 4*time.Second)
			for _, e := range back {
				e.restart()
			}
			ch.logf("SIGKILL %s and %s (quorum lost), restarted after %v", back[0].name, back[1].name, d.Round(time.Millisecond))
		}
		for _, p := range back {
			if err := p.waitReady(60 * time.Second); err != nil {
				ch.t.Errorf("after a fault: %v\n%s", err, p.current().log)
				return fmt.Sprint(counts)
			}
		}
		ch.logf("all back")
	}
	return fmt.Sprint(counts)
}

func kind(p *chaosPart) string { return strings.TrimRight(p.name, "-0123456789") }

// chaosHistory is the clients' history for porcupine, and what they
// wrote.
type chaosHistory struct {
	start   time.Time
	mu      sync.Mutex
	ops     []porcupine.Operation
	acked   []ackedWrite
	written map[string]map[string]bool // key → every value a client sent for it
}

// never is the answer time of an operation of unknown outcome: it may take
// effect at any time after its call.
const never = int64(1) << 62

func (h *chaosHistory) now() int64 { return int64(time.Since(h.start)) }

func (h *chaosHistory) wrote(key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.written[key] == nil {
		h.written[key] = map[string]bool{}
	}
	h.written[key][value] = true
}

func (h *chaosHistory) add(op porcupine.Operation, ack *ackedWrite) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
	if ack != nil {
		h.acked = append(h.acked, *ack)
	}
}

func (h *chaosHistory) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Operation(nil), h.ops...)
}

func (h *chaosHistory) ackedWrites() []ackedWrite {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ackedWrite(nil), h.acked...)
}

func (h *chaosHistory) writtenValues() map[string]map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.written
}

func (h *chaosHistory) lastAckedRV() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var last uint64
	for _, w := range h.acked {
		last = max(last, w.rv)
	}
	return last
}

// counts says how many writes were acknowledged and how many operations
// have an unknown outcome.
func (h *chaosHistory) counts() (acked, unknown int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, op := range h.ops {
		if op.Output.(kvOutput).outcome == outUnknown {
			unknown++
		}
	}
	return len(h.acked), unknown
}

// runClient does random operations on random keys through random API
// servers until ctx is done.
func (ch *chaosCluster) runClient(ctx context.Context, h *chaosHistory, id, keys int, r *rand.Rand) {
	for n := 0; ctx.Err() == nil; n++ {
		key := chaosKey(r.IntN(keys))
		var in kvInput
		switch x := r.IntN(100); {
		case x < 25:
			in = kvInput{op: opCreate, key: key, value: fmt.Sprintf("c%d-%d", id, n)}
		case x < 50:
			in = kvInput{op: opUpdate, key: key, value: fmt.Sprintf("c%d-%d", id, n)}
		case x < 65:
			in = kvInput{op: opDelete, key: key}
		case x < 85:
			in = kvInput{op: opGet, key: key}
		default:
			in = kvInput{op: opList, key: key}
		}
		ch.do(context.Background(), h, id, r.IntN(len(ch.servers)), in)
		time.Sleep(20 * time.Millisecond)
	}
}

// finalRead reads key through server until it gets an answer, and adds
// the read to the history.
func (ch *chaosCluster) finalRead(h *chaosHistory, client, server int, key string) {
	for range 100 {
		if ch.do(context.Background(), h, client, server, kvInput{op: opGet, key: key}) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	ch.t.Errorf("no answer to a read of %s through apiserver-%d", key, server)
}

// do sends in through server and adds it to the history; a read that gets
// no clear answer is left out. It says whether the answer was clear.
func (ch *chaosCluster) do(ctx context.Context, h *chaosHistory, client, server int, in kvInput) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cms := ch.clients[server].CoreV1().ConfigMaps(chaosNamespace)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: in.key, Labels: map[string]string{chaosLabel: "true"}},
		Data:       map[string]string{"v": in.value},
	}
	if in.value != "" {
		h.wrote(in.key, in.value)
	}
	call := h.now()
	var (
		out kvOutput
		got *corev1.ConfigMap
		err error
	)
	switch in.op {
	case opCreate:
		got, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	case opUpdate:
		got, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	case opDelete:
		err = cms.Delete(ctx, in.key, metav1.DeleteOptions{})
	case opGet:
		got, err = cms.Get(ctx, in.key, metav1.GetOptions{})
	case opList:
		var list *corev1.ConfigMapList
		list, err = cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + in.key})
		if err == nil && len(list.Items) > 0 {
			got = &list.Items[0]
		}
	}
	ret := h.now()
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
		ch.noteError(err)
	}
	read := in.op == opGet || in.op == opList
	switch {
	case err == nil && read:
		out = kvOutput{outcome: outOK, found: got != nil}
		if got != nil {
			out.value = got.Data["v"]
		}
	case err == nil:
		out = kvOutput{outcome: outOK}
	case apierrors.IsNotFound(err) && read:
		out = kvOutput{outcome: outOK}
	case apierrors.IsNotFound(err):
		out = kvOutput{outcome: outNotFound}
	case apierrors.IsAlreadyExists(err):
		out = kvOutput{outcome: outAlreadyExists}
	case read:
		return false
	default:
		out, ret = kvOutput{outcome: outUnknown}, never
	}
	var ack *ackedWrite
	if err == nil && !read && got != nil {
		rv, _ := strconv.ParseUint(got.ResourceVersion, 10, 64)
		ack = &ackedWrite{key: in.key, value: in.value, rv: rv}
	}
	h.add(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}, ack)
	return true
}

// diagnoseStall logs what each API server's watch cache holds and whether a
// new write reaches the watchers, when they did not see the last
// acknowledged write.
func (ch *chaosCluster) diagnoseStall(h *chaosHistory, watchers []*chaosWatcher) {
	ctx := context.Background()
	for i, c := range ch.clients {
		cached, err := c.CoreV1().ConfigMaps(chaosNamespace).List(ctx, metav1.ListOptions{LabelSelector: chaosLabel, ResourceVersion: "0"})
		consistent, err2 := c.CoreV1().ConfigMaps(chaosNamespace).List(ctx, metav1.ListOptions{LabelSelector: chaosLabel})
		ch.t.Logf("apiserver-%d: watch cache at rv %s (%v), consistent list at rv %s (%v)", i, rvOf(cached), err, rvOf(consistent), err2)
	}
	h.wrote("marker", "")
	marker, err := ch.clients[0].CoreV1().ConfigMaps(chaosNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "marker", Labels: map[string]string{chaosLabel: "true"}}}, metav1.CreateOptions{})
	if err != nil {
		ch.t.Logf("marker write: %v", err)
		return
	}
	rv, _ := strconv.ParseUint(marker.ResourceVersion, 10, 64)
	for _, w := range watchers {
		ch.t.Logf("%s after a new write at rv %d: %v; it is %s", w.name, rv, w.waitFor(rv, 20*time.Second), w.describe())
	}
	var stacks strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&stacks, 2)
	for _, g := range strings.Split(stacks.String(), "\n\n") {
		if strings.Contains(g, "chaosWatcher") {
			ch.t.Logf("watcher goroutine:\n%s", g)
		}
	}
	for _, p := range ch.apis {
		for _, l := range p.grep("cacher") {
			ch.t.Log(l)
		}
		for _, l := range p.grep("etcd") {
			if strings.Contains(l, "atch") {
				ch.t.Log(l)
			}
		}
	}
}

func rvOf(l *corev1.ConfigMapList) string {
	if l == nil {
		return ""
	}
	return l.ResourceVersion
}

// chaosWatcher watches the chaos ConfigMaps through one API server from
// the start, resuming from the last resourceVersion it saw whenever the
// watch ends, and listing again (a gap) when that is too old.
type chaosWatcher struct {
	name   string
	client *kubernetes.Clientset
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	rec        watchRecord
	lastRV     uint64
	reconnects int
	// state says what it does now, and since when; lastErr is the last
	// error it got, for the log when it stalls.
	state   string
	since   time.Time
	lastErr error
}

func (w *chaosWatcher) setState(state string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state, w.since = state, time.Now()
	if err != nil {
		w.lastErr = err
	}
}

// describe says what the watcher does and what it last got.
func (w *chaosWatcher) describe() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%s for %v, %d events, last error: %v", w.state, time.Since(w.since).Round(time.Millisecond), len(w.rec.events), w.lastErr)
}

func startChaosWatcher(ctx context.Context, name string, client *kubernetes.Clientset) *chaosWatcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &chaosWatcher{name: name, client: client, cancel: cancel, done: make(chan struct{}), rec: watchRecord{name: name, gaps: map[int]bool{}}}
	go w.run(ctx)
	return w
}

func (w *chaosWatcher) run(ctx context.Context) {
	defer close(w.done)
	cms := w.client.CoreV1().ConfigMaps(chaosNamespace)
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			w.setState("listing", nil)
			list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: chaosLabel})
			if err != nil {
				w.setState("listing failed", err)
				time.Sleep(200 * time.Millisecond)
				continue
			}
			rv = list.ResourceVersion
			w.mu.Lock()
			if len(w.rec.events) > 0 {
				w.rec.gaps[len(w.rec.events)] = true
			}
			if n, err := strconv.ParseUint(rv, 10, 64); err == nil {
				w.lastRV = max(w.lastRV, n)
			}
			w.mu.Unlock()
		}
		w.setState("opening a watch from rv "+rv, nil)
		wi, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: chaosLabel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			w.setState("opening a watch failed", err)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rv = ""
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		rv = w.consume(wi, rv)
		w.mu.Lock()
		w.reconnects++
		w.mu.Unlock()
	}
}

// consume records wi's events until it ends, and returns the
// resourceVersion to resume from ("" to list again).
func (w *chaosWatcher) consume(wi watch.Interface, rv string) string {
	defer wi.Stop()
	w.setState("watching from rv "+rv, nil)
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			w.setState("watch ended with an error event", apierrors.FromObject(ev.Object))
			if status := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(status) || apierrors.IsGone(status) {
				return ""
			}
			return rv
		}
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(cm.ResourceVersion, 10, 64)
		if err != nil {
			continue
		}
		rv = cm.ResourceVersion
		w.mu.Lock()
		w.lastRV = max(w.lastRV, n)
		if ev.Type != watch.Bookmark {
			w.rec.events = append(w.rec.events, watchEvent{typ: string(ev.Type), key: cm.Name, rv: n, value: cm.Data["v"]})
		}
		w.mu.Unlock()
	}
	return rv
}

// waitFor waits until the watcher has seen resourceVersion rv.
func (w *chaosWatcher) waitFor(rv uint64, timeout time.Duration) error {
	return poll.Wait(context.Background(), 200*time.Millisecond, timeout, func() error {
		w.mu.Lock()
		last := w.lastRV
		w.mu.Unlock()
		if last < rv {
			return fmt.Errorf("saw resourceVersion %d, not the last acknowledged %d", last, rv)
		}
		return nil
	})
}

func (w *chaosWatcher) stop() {
	w.cancel()
	<-w.done
}

func (w *chaosWatcher) record() watchRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rec
}

// gcPair is an owner ConfigMap and a dependent with an ownerReference to
// it, whose owner was deleted with policy. Both were acknowledged (or seen)
// created, and the owner's deletion acknowledged (or the owner seen gone).
type gcPair struct {
	owner, dependent string
	policy           metav1.DeletionPropagation
	// ownerUID is the owner deleted; lateOwner says that a create of the
	// owner's name got no clear answer, so that it may yet take effect
	// after the deletion (a member SIGSTOPped with the request in hand
	// proposes it when it resumes) and make a new owner of that name.
	ownerUID  types.UID
	lateOwner bool
}

// runGCLoad makes owner and dependent pairs and deletes the owners, half
// with the orphan policy and half in the background, until ctx is done;
// it returns the pairs it finished.
func (ch *chaosCluster) runGCLoad(ctx context.Context, r *rand.Rand) []gcPair {
	var pairs []gcPair
	client := func() kubernetes.Interface { return ch.clients[r.IntN(len(ch.clients))] }
	for i := 0; ctx.Err() == nil; i++ {
		p := gcPair{owner: fmt.Sprintf("owner-%d", i), dependent: fmt.Sprintf("dependent-%d", i), policy: metav1.DeletePropagationOrphan}
		if i%2 == 1 {
			p.policy = metav1.DeletePropagationBackground
		}
		owner, unclear, ok := ensureConfigMap(ctx, client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: p.owner}})
		if !ok {
			break
		}
		p.ownerUID, p.lateOwner = owner.UID, unclear
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
		if _, _, ok := ensureConfigMap(ctx, client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: p.dependent, OwnerReferences: []metav1.OwnerReference{ref}}}); !ok {
			break
		}
		deleted := false
		for !deleted && ctx.Err() == nil {
			reqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := client().CoreV1().ConfigMaps(chaosNamespace).Delete(reqCtx, p.owner, metav1.DeleteOptions{PropagationPolicy: &p.policy})
			cancel()
			deleted = err == nil || apierrors.IsNotFound(err)
		}
		if !deleted {
			break
		}
		pairs = append(pairs, p)
		time.Sleep(100 * time.Millisecond)
	}
	return pairs
}

// ensureConfigMap creates cm in the chaos namespace, through a random API
// server each time, until it is acknowledged or seen there; it returns
// the stored object and whether a create got no clear answer, or false
// when ctx ends first.
func ensureConfigMap(ctx context.Context, client func() kubernetes.Interface, cm *corev1.ConfigMap) (*corev1.ConfigMap, bool, bool) {
	unclear := false
	for ctx.Err() == nil {
		reqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		got, err := client().CoreV1().ConfigMaps(chaosNamespace).Create(reqCtx, cm, metav1.CreateOptions{})
		if err != nil {
			unclear = unclear || !apierrors.IsAlreadyExists(err)
			got, err = client().CoreV1().ConfigMaps(chaosNamespace).Get(reqCtx, cm.Name, metav1.GetOptions{})
		}
		cancel()
		if err == nil {
			return got, unclear, true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, unclear, false
}

// checkGarbageCollection checks that, once the controllers have caught
// up, every owner is gone, every dependent of an owner deleted with the
// orphan policy is there without its ownerReference, and every other
// dependent is gone.
func (ch *chaosCluster) checkGarbageCollection(pairs []gcPair) {
	ctx := context.Background()
	orphans := 0
	for _, p := range pairs {
		if p.policy == metav1.DeletePropagationOrphan {
			orphans++
		}
	}
	ch.t.Logf("garbage collection: %d owners deleted, %d with the orphan policy", len(pairs), orphans)
	late := map[string]bool{}
	poll.Until(ch.t, 200*time.Millisecond, 90*time.Second, func() error {
		list, err := ch.admin(0).CoreV1().ConfigMaps(chaosNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		there := map[string]corev1.ConfigMap{}
		for _, cm := range list.Items {
			there[cm.Name] = cm
		}
		var bad []string
		for _, p := range pairs {
			if owner, ok := there[p.owner]; ok && owner.UID != p.ownerUID && p.lateOwner {
				// A create of that name that got no clear answer took
				// effect after the deletion: another owner, with no
				// dependents.
				if !late[p.owner] {
					late[p.owner] = true
					ch.t.Logf("%s is there again, made by a create that took effect late (uid %s, the deleted one was %s)", p.owner, owner.UID, p.ownerUID)
				}
			} else if ok {
				bad = append(bad, fmt.Sprintf("%s is still there (deletionTimestamp %v, finalizers %v, uid %s); the controllers said:\n%s",
					p.owner, owner.DeletionTimestamp, owner.Finalizers, owner.UID, ch.controllersSaid(p.owner)))
			}
			dep, ok := there[p.dependent]
			switch {
			case p.policy == metav1.DeletePropagationOrphan && !ok:
				var lines []string
				for _, c := range ch.ctrls {
					lines = append(append(lines, c.grep(chaosNamespace+"/"+p.owner+" ")...), c.grep(chaosNamespace+"/"+p.dependent+" ")...)
				}
				ch.t.Errorf("%s, whose owner was deleted with the orphan policy, was deleted; the controllers' log lines naming them:\n%s",
					p.dependent, strings.Join(lines, "\n"))
				return nil
			case p.policy == metav1.DeletePropagationOrphan && len(dep.OwnerReferences) > 0:
				bad = append(bad, p.dependent+" still has its ownerReference")
			case p.policy != metav1.DeletePropagationOrphan && ok:
				bad = append(bad, p.dependent+" is still there")
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%d pairs not collected yet, e.g. %s", len(bad), bad[0])
		}
		return nil
	})
}

// controllersSaid returns what the controllers said about name, for a pair the
// collector did not finish.
func (ch *chaosCluster) controllersSaid(name string) string {
	var lines []string
	for _, c := range ch.ctrls {
		lines = append(lines, c.grep(chaosNamespace+"/"+name+" ")...)
	}
	return strings.Join(lines, "\n")
}

// checkControllers checks that the controllers lead and work after the
// faults: a namespace with a ConfigMap in it is deleted.
func (ch *chaosCluster) checkControllers() {
	t := ch.t
	ctx := context.Background()
	client := ch.admin(0)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "chaos-end"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("chaos-end").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, "chaos-end", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 200*time.Millisecond, 90*time.Second, func() error {
		_, err := ch.admin(1).CoreV1().Namespaces().Get(ctx, "chaos-end", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.Join(err, fmt.Errorf("namespace chaos-end is still there after the faults:\n--- controllers-0\n%s\n--- controllers-1\n%s",
			tail(ch.ctrls[0].current().log.String(), 3000), tail(ch.ctrls[1].current().log.String(), 3000)))
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
