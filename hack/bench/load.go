package main

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// result is one measured operation: its rate and latencies.
type result struct {
	ops        int
	errors     int
	elapsed    time.Duration
	p50, p99   time.Duration
	firstError error
	rounds     int     // how many rounds this is the median of (0: a single one)
	lo, hi     float64 // the lowest and highest rate of those rounds
	// cpuPerOp is the CPU time the stack's processes used per request
	// while it was measured (of rounds, the median round's): what a
	// request costs the server, which a busy shared machine disturbs
	// less than it does a rate.
	cpuPerOp time.Duration
}

func (r result) rate() float64 { return float64(r.ops) / r.elapsed.Seconds() }

// median combines rounds of one measurement: the rate of the median
// round, the median p50 and p99, every round's errors, and the spread of
// the rates, so a table shows how far one run can be trusted.
func median(rounds []result) result {
	if len(rounds) == 1 {
		return rounds[0]
	}
	byRate := slices.Clone(rounds)
	slices.SortFunc(byRate, func(a, b result) int { return cmp.Compare(a.rate(), b.rate()) })
	m := byRate[len(byRate)/2]
	m.rounds, m.lo, m.hi = len(rounds), byRate[0].rate(), byRate[len(byRate)-1].rate()
	mid := func(f func(result) time.Duration) time.Duration {
		ds := make([]time.Duration, len(rounds))
		for i, r := range rounds {
			ds[i] = f(r)
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	m.p50 = mid(func(r result) time.Duration { return r.p50 })
	m.p99 = mid(func(r result) time.Duration { return r.p99 })
	m.cpuPerOp = mid(func(r result) time.Duration { return r.cpuPerOp })
	m.errors, m.firstError = 0, nil
	for _, r := range rounds {
		m.errors += r.errors
		if m.firstError == nil {
			m.firstError = r.firstError
		}
	}
	return m
}

// latencies collects per-request durations from several workers.
type latencies struct {
	mu     sync.Mutex
	all    []time.Duration
	errors int
	first  error
}

func (l *latencies) add(d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errors++
		if l.first == nil {
			l.first = err
		}
		return
	}
	l.all = append(l.all, d)
}

func (l *latencies) result(elapsed time.Duration) result {
	slices.Sort(l.all)
	r := result{ops: len(l.all), errors: l.errors, elapsed: elapsed, firstError: l.first}
	if n := len(l.all); n > 0 {
		r.p50, r.p99 = l.all[n/2], l.all[min(n-1, n*99/100)]
	}
	return r
}

// clientset is a clientset with its own connections: each load worker
// gets one, as separate clients would.
func clientset(cfg *rest.Config) kubernetes.Interface {
	c := rest.CopyConfig(cfg)
	c.Dial = (&net.Dialer{}).DialContext // client-go shares no transport with a custom dialer
	return kubernetes.NewForConfigOrDie(c)
}

// run runs op in each of clients workers for d and measures each call.
// op gets the worker and the call's index within the worker.
func run(clients int, d time.Duration, op func(ctx context.Context, worker, i int) error) result {
	var l latencies
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := range clients {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				start := time.Now()
				err := op(context.Background(), w, i)
				if err == errNothingLeft {
					return
				}
				l.add(time.Since(start), err)
			}
		})
	}
	wg.Wait()
	return l.result(time.Since(t0))
}

// ensureNamespace creates ns if it is not there.
func ensureNamespace(c kubernetes.Interface, ns string) error {
	_, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": "true"}}, Data: map[string]string{"k": strings.Repeat("v", 256)}}
}

// crud measures create, get, update and delete of ConfigMaps at clients
// concurrent clients, d each, in a namespace of its own, and the CPU
// time the stack used for each, by cpu.
func crud(cfg *rest.Config, clients int, d time.Duration, round string, cpu func() time.Duration) (map[string]result, error) {
	ns := "bench-" + round
	workers := make([]kubernetes.Interface, clients)
	for i := range workers {
		workers[i] = clientset(cfg)
	}
	if err := ensureNamespace(workers[0], ns); err != nil {
		return nil, err
	}
	out := map[string]result{}
	measureOp := func(op string, do func(ctx context.Context, w, i int) error) {
		c0 := cpu()
		r := run(clients, d, do)
		if r.ops > 0 {
			r.cpuPerOp = (cpu() - c0) / time.Duration(r.ops)
		}
		out[op] = r
	}
	created := make([]int, clients) // how many each worker created
	measureOp("create", func(ctx context.Context, w, i int) error {
		_, err := workers[w].CoreV1().ConfigMaps(ns).Create(ctx, configMap(fmt.Sprintf("w%d-%d", w, i)), metav1.CreateOptions{})
		if err == nil {
			created[w] = i + 1
		}
		return err
	})
	measureOp("get", func(ctx context.Context, w, i int) error {
		_, err := workers[w].CoreV1().ConfigMaps(ns).Get(ctx, fmt.Sprintf("w%d-%d", w, i%max(1, created[w])), metav1.GetOptions{})
		return err
	})
	// Each worker updates its own objects, with the resourceVersion it read.
	objs := make([]*corev1.ConfigMap, clients)
	measureOp("update", func(ctx context.Context, w, i int) error {
		c := workers[w].CoreV1().ConfigMaps(ns)
		if objs[w] == nil {
			cm, err := c.Get(ctx, fmt.Sprintf("w%d-0", w), metav1.GetOptions{})
			if err != nil {
				return err
			}
			objs[w] = cm
		}
		objs[w].Data["i"] = strconv.Itoa(i)
		cm, err := c.Update(ctx, objs[w], metav1.UpdateOptions{})
		if err == nil {
			objs[w] = cm
		}
		return err
	})
	measureOp("delete", func(ctx context.Context, w, i int) error {
		if i >= created[w] {
			return errNothingLeft
		}
		return workers[w].CoreV1().ConfigMaps(ns).Delete(ctx, fmt.Sprintf("w%d-%d", w, i), metav1.DeleteOptions{})
	})
	return out, nil
}

// errNothingLeft ends a worker that has deleted everything it created.
var errNothingLeft = fmt.Errorf("nothing left to delete")

// crds creates n CRDs, each in a group of its own, and returns how long
// until discovery lists every one.
func crds(cfg *rest.Config, from, to int) (time.Duration, error) {
	client := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	stages, err := watchCRDStages(client)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, to-from)
	sem := make(chan struct{}, 8)
	for i := from; i < to; i++ {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			group := fmt.Sprintf("g%d.bench.example.com", i)
			stages.creating("things." + group)
			_, err := client.Create(context.Background(), &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: "things." + group},
				Spec: apiextensionsv1.CustomResourceDefinitionSpec{
					Group: group, Scope: apiextensionsv1.NamespaceScoped,
					Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Kind: "Thing"},
					Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
						Name: "v1", Served: true, Storage: true,
						Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
							Type: "object",
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
									"size": {Type: "integer"}, "name": {Type: "string"},
									"items": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
								}},
								"status": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
							},
						}},
					}},
				},
			}, metav1.CreateOptions{})
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		stages.stop(t0)
		return 0, err
	default:
	}
	disc := kubernetes.NewForConfigOrDie(cfg).Discovery()
	for {
		groups, err := disc.ServerGroups()
		if err == nil {
			n := 0
			for _, g := range groups.Groups {
				if strings.HasSuffix(g.Name, ".bench.example.com") {
					n++
				}
			}
			if n == to {
				d := time.Since(t0)
				log("%d → %d CRDs: %s; all in discovery at %v", from, to, stages.stop(t0), d.Round(time.Millisecond))
				return d, nil
			}
		}
		if time.Since(t0) > 15*time.Minute {
			stages.stop(t0)
			return 0, fmt.Errorf("not all %d CRDs in discovery after 15m", to)
		}
		time.Sleep(discoveryPoll)
	}
}

// discoveryPoll is how often crds asks for discovery: often enough that
// waiting for the next poll (25 ms on average) is small beside the
// shortest time it measures (about 0.5 s), rarely enough that encoding
// the list of a thousand groups does not load the server it measures.
const discoveryPoll = 50 * time.Millisecond

// crdsWatched waits until the API server serves a watch of each of the n
// bench CRDs (apiserver_longrunning_requests), and returns how long that
// took.
func crdsWatched(cfg *rest.Config, n int) (time.Duration, error) {
	client := kubernetes.NewForConfigOrDie(cfg).CoreV1().RESTClient()
	t0 := time.Now()
	for {
		body, err := client.Get().AbsPath("/metrics").DoRaw(context.Background())
		if err == nil {
			watched := map[string]bool{}
			for line := range strings.Lines(string(body)) {
				if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `verb="WATCH"`) ||
					!strings.Contains(line, `.bench.example.com"`) || strings.HasSuffix(strings.TrimSpace(line), " 0") {
					continue
				}
				if i := strings.Index(line, `group="`); i >= 0 {
					group := line[i+len(`group="`):]
					watched[group[:strings.Index(group, `"`)]] = true
				}
			}
			if len(watched) >= n {
				return time.Since(t0), nil
			}
		}
		if time.Since(t0) > 5*time.Minute {
			return 0, fmt.Errorf("the controllers do not watch all %d CRDs after 5m (last error %v)", n, err)
		}
		time.Sleep(time.Second)
	}
}

// etcdPut measures raw etcd puts of 256-byte values at clients
// concurrent clients for d: the physical limit of a write.
func etcdPut(url string, clients int, d time.Duration) (result, error) {
	cs := make([]*clientv3.Client, clients)
	for i := range cs {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
		if err != nil {
			return result{}, err
		}
		defer c.Close()
		cs[i] = c
	}
	value := strings.Repeat("v", 256)
	return run(clients, d, func(ctx context.Context, w, i int) error {
		_, err := cs[w].Put(ctx, fmt.Sprintf("/bench/%d/%d", w, i), value)
		return err
	}), nil
}
