package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// install creates crds in s, 8 at a time, and measures figures 1 to 4
// but the idle RSS: the time to the last create's answer, to every CRD
// established and in discovery, the CPU the stack used meanwhile and its
// peak RSS. It returns the CRDs created (a create that fails is logged
// and the CRD left out of the figures after).
func install(s stack, crds []*apiextensionsv1.CustomResourceDefinition, r *crdSetResult) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	client := apiextensionsclient.NewForConfigOrDie(s.config()).ApiextensionsV1().CustomResourceDefinitions()
	// The watch gets the whole of each CRD several times over: in
	// protobuf, the bench, which shares the machine with the stack,
	// spends less on decoding it (and the stack on encoding it).
	protobuf := rest.CopyConfig(s.config())
	protobuf.ContentType = "application/vnd.kubernetes.protobuf"
	// The watch lasts as long as the installation, minutes for a thousand
	// CRDs: the stacks' configs give up on a request after a minute.
	protobuf.Timeout = 0
	stages, err := watchCRDStages(apiextensionsclient.NewForConfigOrDie(protobuf).ApiextensionsV1().CustomResourceDefinitions())
	if err != nil {
		return nil, err
	}
	peak := peakRSS(s.pids())
	cpu0 := cpuTime(s.pids())
	t0 := time.Now()
	errs := make([]error, len(crds))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, crd := range crds {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			stages.creating(crd.Name)
			_, errs[i] = client.Create(context.Background(), &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: crd.Name, Labels: crd.Labels, Annotations: crd.Annotations},
				Spec:       crd.Spec,
			}, metav1.CreateOptions{})
		})
	}
	wg.Wait()
	r.created = time.Since(t0)
	var created []*apiextensionsv1.CustomResourceDefinition
	for i, err := range errs {
		if err != nil {
			log("create of %s failed: %v", crds[i].Name, err)
			continue
		}
		created = append(created, crds[i])
	}
	r.crds = len(created)
	log("%d of %d CRDs created in %v", len(created), len(crds), r.created.Round(time.Millisecond))
	if len(created) == 0 {
		stages.stop(t0)
		return nil, fmt.Errorf("no CRD created")
	}
	if r.discovered, err = waitServed(s.config(), stages, created, t0); err != nil {
		stages.stop(t0)
		return nil, err
	}
	r.cpu = cpuTime(s.pids()) - cpu0
	r.rssPeak = peak()
	log("%s", stages.stop(t0))
	log("all established and in discovery after %v, CPU %v, RSS peak %.0f MiB", r.discovered.Round(time.Millisecond), r.cpu, r.rssPeak)
	return created, nil
}

// waitServed waits until the watch of stages has seen every CRD of crds
// established and discovery (aggregated, polled at most every 100 ms)
// lists the resource of each of their served versions, and returns how
// long after t0 the later of the two happened.
func waitServed(cfg *rest.Config, stages *crdStages, crds []*apiextensionsv1.CustomResourceDefinition, t0 time.Time) (time.Duration, error) {
	want := servedResources(crds)
	names := make([]string, len(crds))
	for i, crd := range crds {
		names[i] = crd.Name
	}
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	var listed time.Time // when discovery first listed every resource
	for {
		poll := time.Now()
		if listed.IsZero() {
			// A group that fails comes back as an error beside the rest.
			_, lists, _ := dc.ServerGroupsAndResources()
			n := 0
			for _, l := range lists {
				for _, res := range l.APIResources {
					if want[l.GroupVersion+"/"+res.Name] {
						n++
					}
				}
			}
			if n == len(want) {
				listed = time.Now()
				log("discovery lists all %d resources after %v", n, listed.Sub(t0).Round(time.Millisecond))
			}
		}
		if last, ok := stages.lastEstablished(names); ok && !listed.IsZero() {
			if last.After(listed) {
				return last.Sub(t0), nil
			}
			return listed.Sub(t0), nil
		}
		if time.Since(t0) > 30*time.Minute {
			return 0, fmt.Errorf("not all %d CRDs established and in discovery after 30m", len(crds))
		}
		time.Sleep(100*time.Millisecond - time.Since(poll))
	}
}

// peakRSS samples the RSS of pids every 500 ms until the function it
// returns is called, which returns the highest.
func peakRSS(pids map[string]int) func() float64 {
	done, out := make(chan struct{}), make(chan float64)
	go func() {
		peak := rss(pids)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				peak = max(peak, rss(pids))
			case <-done:
				out <- max(peak, rss(pids))
				return
			}
		}
	}()
	return func() float64 { close(done); return <-out }
}

// kubectlList is the list kubectl get sends (its --chunk-size is 500):
// the first request a person makes of a kind. kube-apiserver serves it
// from etcd until the resource's watch cache has started; a list without
// a limit (fullList) waits for the cache.
var kubectlList, fullList = metav1.ListOptions{Limit: 500}, metav1.ListOptions{}

// firstListCost is figure 5 of some CRDs and one kind of list: the
// median and the highest of how much longer each CRD's first list took
// than its second.
type firstListCost struct{ median, highest time.Duration }

// firstLists lists the resource of each CRD of picked twice with opts,
// cluster-wide, and says how much longer the first lists took.
func firstLists(cfg *rest.Config, picked []*apiextensionsv1.CustomResourceDefinition, opts metav1.ListOptions) (firstListCost, error) {
	dyn := dynamic.NewForConfigOrDie(cfg)
	var extra []time.Duration
	for _, crd := range picked {
		gvr := storageGVR(crd)
		var took [2]time.Duration
		for j := range took {
			t := time.Now()
			if _, err := dyn.Resource(gvr).List(context.Background(), opts); err != nil {
				return firstListCost{}, fmt.Errorf("list %s: %w", gvr, err)
			}
			took[j] = time.Since(t)
		}
		extra = append(extra, took[0]-took[1])
		log("first list (limit %d) of %s: %v, second %v", opts.Limit, gvr.GroupResource(), took[0].Round(time.Microsecond), took[1].Round(time.Microsecond))
	}
	if len(extra) == 0 {
		return firstListCost{}, nil
	}
	slices.Sort(extra)
	c := firstListCost{extra[len(extra)/2], extra[len(extra)-1]}
	log("a first list (limit %d) costs %v more than the second (median of %d), at most %v", opts.Limit, c.median, len(extra), c.highest)
	return c, nil
}

// listPicks are the CRDs whose first lists are timed: 20 spread over
// crds for kubectl's list, and 20 spread over the rest for a list
// without a limit (fewer if the set is small).
func listPicks(crds []*apiextensionsv1.CustomResourceDefinition) (kubectls, fulls []*apiextensionsv1.CustomResourceDefinition) {
	taken := map[int]bool{}
	for _, i := range spread(len(crds), 20) {
		kubectls = append(kubectls, crds[i])
		taken[i] = true
	}
	var rest []*apiextensionsv1.CustomResourceDefinition
	for i, crd := range crds {
		if !taken[i] {
			rest = append(rest, crd)
		}
	}
	for _, i := range spread(len(rest), 20) {
		fulls = append(fulls, rest[i])
	}
	return kubectls, fulls
}

// kubectl runs `gcp kubectl` with args against kubeconfig, with a cache
// dir of its own (so its discovery and OpenAPI caches are cold), and
// returns its wall time and how many lines it wrote.
func kubectl(gcp, kubeconfig, scratch string, args ...string) (time.Duration, int, error) {
	cache, err := os.MkdirTemp(scratch, "kubectl-cache")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(cache)
	cmd := exec.Command(gcp, append([]string{"kubectl", "--kubeconfig", kubeconfig, "--cache-dir", cache}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t := time.Now()
	err = cmd.Run()
	took := time.Since(t)
	if err != nil {
		return 0, 0, fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return took, strings.Count(stdout.String(), "\n"), nil
}

// explainArgs are the kubectl explain arguments of a field path of
// t.crd's resource (none for the resource itself), in its storage
// version's group.
func explainArgs(t explainTarget, path []string) []string {
	v := storageVersion(t.crd)
	return []string{"explain", strings.Join(append([]string{t.crd.Spec.Names.Plural}, path...), "."),
		"--api-version", t.crd.Spec.Group + "/" + v.Name}
}

// openAPIGroup reads /openapi/v3 and then, timed, the document it lists
// for group/version, the first time; it logs a second read's time.
func openAPIGroup(cfg *rest.Config, group, version string) (time.Duration, error) {
	client := kubernetes.NewForConfigOrDie(cfg).Discovery().RESTClient()
	t := time.Now()
	body, err := client.Get().AbsPath("/openapi/v3").SetHeader("Accept", "application/json").DoRaw(context.Background())
	if err != nil {
		return 0, fmt.Errorf("GET /openapi/v3: %w", err)
	}
	index := time.Since(t)
	var paths struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &paths); err != nil {
		return 0, fmt.Errorf("/openapi/v3: %w", err)
	}
	p, ok := paths.Paths["apis/"+group+"/"+version]
	if !ok {
		return 0, fmt.Errorf("/openapi/v3 does not list apis/%s/%s", group, version)
	}
	var took [2]time.Duration
	var size int
	for i := range took {
		t := time.Now()
		doc, err := client.Get().RequestURI(p.ServerRelativeURL).SetHeader("Accept", "application/json").DoRaw(context.Background())
		if err != nil {
			return 0, fmt.Errorf("GET %s: %w", p.ServerRelativeURL, err)
		}
		took[i], size = time.Since(t), len(doc)
	}
	log("GET /openapi/v3 took %v; %s (%.1f MiB) %v the first time, %v the second", index.Round(time.Millisecond),
		p.ServerRelativeURL, float64(size)/(1<<20), took[0].Round(time.Millisecond), took[1].Round(time.Millisecond))
	return took[0], nil
}
