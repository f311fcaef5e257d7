// Command bench measures `gcp start` and upstream kube-apiserver +
// kube-controller-manager + etcd side by side in one run, on the same
// machine, with the same client-go load, and prints a table of the
// figures and their ratios. hack/bench/run.sh builds everything and runs
// it; docs/performance.md has the latest table.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

func main() {
	gcpBin := flag.String("gcp", "", "the gcp binary")
	upstreamDir := flag.String("upstream", "", "directory with kube-apiserver, kube-controller-manager and etcd")
	work := flag.String("work", "", "scratch directory (default: a new temporary one, removed after)")
	clientsFlag := flag.String("clients", "1,8,32", "concurrent clients for the request rates")
	crdsFlag := flag.String("crds", "100,300", "CRD counts to measure memory and discovery at, ascending")
	lists := flag.String("lists", "3000,10000", "ConfigMap counts to list")
	d := flag.Duration("duration", 5*time.Second, "how long each request rate is measured, in each round")
	rounds := flag.Int("rounds", 3, "rounds of each request rate (the median is reported, with the spread)")
	warm := flag.Int("warm", 3, "warm starts (the median is reported)")
	only := flag.String("only", "", "measure only this stack (gcp or upstream) and print no table: for iterating on one figure")
	listReps := flag.Int("list-reps", 200, "lists of each size and kind (of 200, the p99 is the second slowest)")
	watchEvents := flag.Int("watch-events", 3000, "creates whose delivery to an open watch is timed")
	gcpFlags := flag.String("gcp-flags", "", "more flags for gcp start, separated by spaces (e.g. --profiling, to take profiles while it runs)")
	crdSets := flag.String("crd-set", "", "CRD set archives (hack/bench/crdsets/*.tar.xz), comma separated: install each into each stack and measure only that (docs/performance.md)")
	crdLimit := flag.Int("crd-limit", 0, "with --crd-set, only the first N CRDs of each set by file name (0: all)")
	crdSettle := flag.Duration("crd-settle", time.Minute, "with --crd-set, how long a stack idles before each RSS after the CRDs is read")
	crdObjects := flag.Int("crd-objects", 100, "with --crd-set, how many CRDs get one object each (0: none)")
	flag.Parse()
	if *gcpBin == "" || *upstreamDir == "" {
		fmt.Fprintln(os.Stderr, "bench: --gcp and --upstream are required (hack/bench/run.sh sets them)")
		os.Exit(1)
	}
	cfg := config{clients: ints(*clientsFlag), crds: ints(*crdsFlag), lists: ints(*lists), d: *d, rounds: max(1, *rounds), warm: max(1, *warm),
		listReps: max(1, *listReps), watchEvents: max(1, *watchEvents)}
	dir := *work
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "gcp-bench"); err != nil {
			fail(err)
		}
		defer os.RemoveAll(dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fail(err)
	}
	gcp, upstream, err := copyBinaries(filepath.Join(dir, "bin"), *gcpBin, *upstreamDir)
	if err != nil {
		fail(fmt.Errorf("copying the binaries: %w", err))
	}
	if *crdSets != "" {
		// No controller watches every kind: no kube-controller-manager,
		// and gcp start without the two controllers that would.
		stacks := pick([]stack{
			&gcpStack{bin: gcp, flags: append([]string{"--controllers=*,-garbage-collector-controller,-resourcequota-controller"}, strings.Fields(*gcpFlags)...)},
			&upstreamStack{gcp: gcp, bin: upstream},
		}, *only)
		run := crdSetRun{gcp: gcp, dir: dir, settle: *crdSettle, objects: max(0, *crdObjects)}
		if err := runCRDSets(stacks, strings.Split(*crdSets, ","), max(0, *crdLimit), run, *upstreamDir); err != nil {
			fail(err)
		}
		return
	}
	stacks := pick([]stack{
		&gcpStack{bin: gcp, flags: strings.Fields(*gcpFlags)},
		&upstreamStack{gcp: gcp, bin: upstream, controllers: true},
	}, *only)
	results := make([]*measured, len(stacks))
	for i, s := range stacks {
		fmt.Fprintf(os.Stderr, "== %s\n", s.name())
		m, err := measure(s, filepath.Join(dir, strconv.Itoa(i)), cfg, len(stacks) == 1)
		s.stop()
		if err != nil {
			fail(fmt.Errorf("%s: %w", s.name(), err))
		}
		results[i] = m
	}
	if *only == "" {
		fmt.Fprintf(os.Stderr, "== both, side by side: lists and watch delivery\n")
		share, err := measurePaired(stacks, filepath.Join(dir, "paired"), cfg, results)
		for _, s := range stacks {
			s.stop()
		}
		if err != nil {
			fail(err)
		}
		report(os.Stdout, cfg, results[0], results[1], share, *upstreamDir)
	}
}

// measurePaired starts every stack afresh, all at once, and measures
// their lists and watch delivery alternating between them, into results.
func measurePaired(stacks []stack, dir string, cfg config, results []*measured) (pairedShare, error) {
	cfgs := make([]*rest.Config, len(stacks))
	for i, s := range stacks {
		if _, err := s.start(fmt.Sprintf("%s-%d", dir, i)); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name(), err)
		}
		cfgs[i] = s.config()
	}
	r, share, err := measureReads(cfgs, cfg.lists, cfg.listReps, cfg.watchEvents)
	if err != nil {
		return nil, err
	}
	for i := range results {
		results[i].setReads(r[i])
	}
	return share, nil
}

// pick is both stacks, gcp's first, or only the one --only names.
func pick(stacks []stack, only string) []stack {
	switch only {
	case "":
		return stacks
	case "gcp":
		return stacks[:1]
	case "upstream":
		return stacks[1:]
	}
	fail(fmt.Errorf("--only %q: want gcp or upstream", only))
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			fail(fmt.Errorf("%q: %w", s, err))
		}
		out = append(out, n)
	}
	return out
}

// config is what a run measures.
type config struct {
	clients, crds, lists []int
	d                    time.Duration
	rounds, warm         int
	listReps             int // lists of each size and kind
	watchEvents          int // creates timed to their watch event
}

// measured is everything measured of one stack.
type measured struct {
	name             string
	cold, warm       time.Duration
	idle             float64            // MiB, every process
	idleParts        map[string]float64 // MiB by process
	rates            map[string]map[int]result
	lists            map[int]map[string]result
	watch            result
	crdTime, crdRSS  map[int]float64 // seconds, MiB
	etcdPut          map[int]result
	idleBeforeCRDs   float64
	apiserverAndEtcd float64 // idle MiB of kube-apiserver + etcd only (upstream)
	idleAnon         float64 // idle anonymous MiB, every process
}

func (m *measured) setReads(r reads) {
	m.lists, m.watch = r.lists, r.watch
	for n, byKind := range r.lists {
		for k, v := range byKind {
			log("%s: list %d %s: p50 %v p99 %v errors %d %v", m.name, n, k, v.p50, v.p99, v.errors, v.firstError)
		}
	}
	log("%s: watch delivery p50 %v p99 %v", m.name, r.watch.p50, r.watch.p99)
}

// ops are the request rates measured, in the order measured.
var ops = []string{"create", "get", "update", "delete"}

// idleWait is how long a stack idles before its RSS is read.
const idleWait = 10 * time.Second

// measure measures s started on dir. Lists and watch delivery are
// measured here only when s is measured alone; otherwise measurePaired
// measures them with both stacks running.
func measure(s stack, dir string, cfg config, alone bool) (*measured, error) {
	m := &measured{name: s.name(), rates: map[string]map[int]result{},
		crdTime: map[int]float64{}, crdRSS: map[int]float64{}, etcdPut: map[int]result{}}
	var err error
	if m.cold, err = s.start(dir); err != nil {
		return nil, err
	}
	log("ready from an empty data dir in %v", m.cold)
	var warms []time.Duration
	for range cfg.warm {
		s.stop()
		w, err := s.start(dir)
		if err != nil {
			return nil, err
		}
		warms = append(warms, w)
	}
	slices.Sort(warms)
	m.warm = warms[len(warms)/2]
	log("ready from a warm data dir: %v (median of %v)", m.warm, warms)
	time.Sleep(idleWait)
	m.idleParts = map[string]float64{}
	for part, pid := range s.pids() {
		m.idleParts[part] = rss(map[string]int{part: pid})
		m.idle += m.idleParts[part]
	}
	m.apiserverAndEtcd = m.idleParts["kube-apiserver"] + m.idleParts["etcd"]
	m.idleAnon = rssAnon(s.pids())
	log("idle RSS %.0f MiB %v", m.idle, m.idleParts)

	// Each rate is measured in rounds, one client count after another
	// and then again, so a passing disturbance of this shared machine
	// lands in one round of one figure and the median leaves it out.
	rounds := map[string]map[int][]result{}
	for r := range cfg.rounds {
		for _, c := range cfg.clients {
			rates, err := crud(s.config(), c, cfg.d, fmt.Sprintf("%d-%d", c, r), func() time.Duration { return cpuTime(s.pids()) })
			if err != nil {
				return nil, err
			}
			for _, op := range ops {
				res := rates[op]
				if rounds[op] == nil {
					rounds[op] = map[int][]result{}
				}
				rounds[op][c] = append(rounds[op][c], res)
				log("%s at %d clients, round %d: %.0f/s p50 %v p99 %v CPU %v per request, errors %d %v", op, c, r+1, res.rate(), res.p50, res.p99, res.cpuPerOp, res.errors, res.firstError)
			}
		}
	}
	for op, byClients := range rounds {
		m.rates[op] = map[int]result{}
		for c, rs := range byClients {
			m.rates[op][c] = median(rs)
		}
	}
	if url := s.etcdURL(); url != "" {
		for _, c := range cfg.clients {
			var rs []result
			for range cfg.rounds {
				r, err := etcdPut(url, c, cfg.d)
				if err != nil {
					return nil, err
				}
				rs = append(rs, r)
				log("raw etcd put at %d clients: %.0f/s", c, r.rate())
			}
			m.etcdPut[c] = median(rs)
		}
	}
	if alone {
		r, _, err := measureReads([]*rest.Config{s.config()}, cfg.lists, cfg.listReps, cfg.watchEvents)
		if err != nil {
			return nil, err
		}
		m.setReads(r[0])
	}

	// CRDs on a fresh data dir, so the objects above do not count.
	s.stop()
	if _, err := s.start(dir + "-crds"); err != nil {
		return nil, err
	}
	time.Sleep(idleWait)
	m.idleBeforeCRDs = rss(s.pids())
	from := 0
	for _, n := range cfg.crds {
		t, err := crds(s.config(), from, n)
		if err != nil {
			return nil, err
		}
		m.crdTime[n] = t.Seconds()
		// Memory once the controllers (the garbage collector's and the
		// quota controller's informers, which rediscover resources every
		// 30 s in both stacks) watch every CRD, and then idleWait.
		watched, err := crdsWatched(s.config(), n)
		if err != nil {
			return nil, err
		}
		time.Sleep(idleWait)
		m.crdRSS[n] = rss(s.pids())
		log("%d → %d CRDs: all in discovery after %v, all watched after %v more, RSS %.0f MiB", from, n, t, watched, m.crdRSS[n])
		from = n
	}
	return m, nil
}

func log(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// report prints the table: each figure for gcp and upstream, and gcp's
// as a ratio of upstream's.
func report(w *os.File, cfg config, g, u *measured, share pairedShare, upstreamDir string) {
	fmt.Fprintf(w, "%s\n\n", machine(upstreamDir))
	if cfg.rounds > 1 {
		fmt.Fprintf(w, "Each rate is the median of %d rounds of %v, with the lowest and highest round in brackets; each p99 is the median of the rounds' p99s.\n\n", cfg.rounds, cfg.d)
	}
	fmt.Fprintf(w, "Lists and watch delivery are measured with both stacks running side by side on fresh data dirs, alternating request by request (%d lists of each size and kind, %d creates timed to their watch event, one at a time); \"sooner\" is the share of those pairs in which gcp answered first.\n\n", cfg.listReps, cfg.watchEvents)
	fmt.Fprintf(w, "| measurement | %s | %s | ratio |\n| --- | --- | --- | --- |\n", g.name, u.name)
	row := func(what string, gv, uv float64, unit string) {
		ratio := "–"
		if uv != 0 {
			ratio = fmt.Sprintf("%.2f", gv/uv)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", what, num(gv, unit), num(uv, unit), ratio)
	}
	// rateRow is row for a rate measured in rounds: the medians, each
	// with the spread of its rounds.
	rateRow := func(what string, gr, ur result) {
		spread := func(r result) string {
			if r.rounds == 0 {
				return num(r.rate(), "/s")
			}
			return fmt.Sprintf("%s (%s–%s)", num(r.rate(), "/s"), num(r.lo, "/s"), num(r.hi, "/s"))
		}
		ratio := "–"
		if ur.rate() != 0 {
			ratio = fmt.Sprintf("%.2f", gr.rate()/ur.rate())
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", what, spread(gr), spread(ur), ratio)
	}
	row("ready, empty data dir", g.cold.Seconds(), u.cold.Seconds(), "s")
	row(fmt.Sprintf("ready, warm data dir (median of %d)", cfg.warm), g.warm.Seconds(), u.warm.Seconds(), "s")
	row("RSS 10 s after start on an empty data dir (before CRDs)", g.idleBeforeCRDs, u.idleBeforeCRDs, "MiB")
	row("idle RSS after 10 s, against kube-apiserver + etcd", g.idle, u.apiserverAndEtcd, "MiB")
	row("idle RSS after 10 s, against the full stack", g.idle, u.idle, "MiB")
	row("… of which anonymous (heap, stacks; the rest is the binaries' pages)", g.idleAnon, u.idleAnon, "MiB")
	prev, prevRSS := 0, g.idleBeforeCRDs
	uPrevRSS := u.idleBeforeCRDs
	for _, n := range cfg.crds {
		row(fmt.Sprintf("RSS with %d CRDs", n), g.crdRSS[n], u.crdRSS[n], "MiB")
		row(fmt.Sprintf("RSS growth per CRD, %d → %d", prev, n), (g.crdRSS[n]-prevRSS)/float64(n-prev), (u.crdRSS[n]-uPrevRSS)/float64(n-prev), "MiB")
		row(fmt.Sprintf("%d → %d CRDs, create to all in discovery", prev, n), g.crdTime[n], u.crdTime[n], "s")
		prev, prevRSS, uPrevRSS = n, g.crdRSS[n], u.crdRSS[n]
	}
	for _, op := range ops {
		for _, c := range cfg.clients {
			gr, ur := g.rates[op][c], u.rates[op][c]
			rateRow(fmt.Sprintf("%s/s at %d clients", op, c), gr, ur)
			row(fmt.Sprintf("%s p99 at %d clients", op, c), ms(gr.p99), ms(ur.p99), "ms")
			row(fmt.Sprintf("%s CPU per request at %d clients", op, c), ms(gr.cpuPerOp), ms(ur.cpuPerOp), "ms")
			if gr.errors+ur.errors > 0 {
				fmt.Fprintf(w, "| %s errors at %d clients | %d | %d | |\n", op, c, gr.errors, ur.errors)
			}
		}
	}
	for _, n := range cfg.lists {
		for _, k := range listKinds {
			kind := k.name
			gr, ur := g.lists[n][kind], u.lists[n][kind]
			row(fmt.Sprintf("list %d ConfigMaps, %s, p50", n, kind), ms(gr.p50), ms(ur.p50), "ms")
			row(fmt.Sprintf("list %d ConfigMaps, %s, p99", n, kind), ms(gr.p99), ms(ur.p99), "ms")
			fmt.Fprintf(w, "| list %d ConfigMaps, %s, gcp sooner | %.0f %% of pairs | | |\n", n, kind, 100*share[listKey(n, kind)])
		}
	}
	row("watch delivery after a create, p50", ms(g.watch.p50), ms(u.watch.p50), "ms")
	row("watch delivery after a create, p99", ms(g.watch.p99), ms(u.watch.p99), "ms")
	fmt.Fprintf(w, "| watch delivery, gcp sooner | %.0f %% of pairs | | |\n", 100*share[watchKey])
	for _, c := range cfg.clients {
		if put := u.etcdPut[c].rate(); put > 0 {
			fmt.Fprintf(w, "| create at %d clients as a share of raw etcd put (%.0f/s) | %.0f %% | %.0f %% | |\n", c, put,
				100*g.rates["create"][c].rate()/put, 100*u.rates["create"][c].rate()/put)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func num(v float64, unit string) string {
	switch {
	case unit == "s" || unit == "ms" && v < 10 || unit == "MiB" && v < 10:
		return fmt.Sprintf("%.2f %s", v, unit)
	case unit == "/s":
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
}

// machine says what ran the benchmark: the machine, Go, the upstream
// binaries' versions and when.
func machine(upstreamDir string) string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("Machine: %d cores (%s), %s/%s, %s. Upstream: %s. Run: %s.", runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH, runtime.Version(), versions(upstreamDir), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}

// versions reports the upstream binaries' versions, as
// build-upstream.sh wrote them down.
func versions(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "VERSION"))
	if err != nil {
		return "unknown versions"
	}
	return strings.TrimSpace(string(b))
}
