package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The --crd-set mode installs a real CRD set (hack/bench/crdsets) into
// each stack, one after the other, and reports each figure as gcp ÷
// upstream (issue 38). Neither stack runs a controller that watches
// every kind: upstream is kube-apiserver + etcd without
// kube-controller-manager, gcp start runs without the garbage collector
// and the quota controller. Until figure 9 no client watches the CRDs'
// kinds.

// crdSetRun is what every set's measurement shares.
type crdSetRun struct {
	gcp     string        // the gcp binary (its kubectl is used against both stacks)
	dir     string        // scratch
	settle  time.Duration // how long a stack idles before an idle RSS is read
	objects int           // CRDs that get one object each (figure 10)
}

// crdSetResult is every figure of one set in one stack.
type crdSetResult struct {
	name                     string
	crds                     int           // created
	rssBefore                float64       // MiB, idleWait after the start, before any CRD
	created, discovered      time.Duration // from the first create
	cpu                      time.Duration // the stack's, over discovered
	rssPeak, rssIdle         float64       // MiB
	firstList, firstFullList firstListCost // kubectl's list, and one without a limit
	apiResources             time.Duration
	explain, explainAll      time.Duration // a deep field; spec, --recursive
	openAPI                  time.Duration // the biggest group's document, the first GET
	synced                   time.Duration // every kind's informer
	rssWatched               float64
	objectsOK, objectsSent   int
	rssObjects               float64
	restart                  time.Duration // to every CRD served
}

// crdSetTargets are what a set's figures 7 and 8 ask for: the same for
// both stacks.
type crdSetTargets struct {
	explain        explainTarget
	group, version string
	groupCRDs      int
}

// runCRDSets measures each archive of paths in each stack and prints a
// table for each (with two stacks, with ratios).
func runCRDSets(stacks []stack, paths []string, limit int, run crdSetRun, upstreamDir string) error {
	for _, path := range paths {
		log("reading %s", path)
		set, err := readCRDSet(path, limit)
		if err != nil {
			return err
		}
		t := crdSetTargets{explain: deepestField(set.crds)}
		t.group, t.version, t.groupCRDs = biggestGroup(set.crds)
		if t.explain.crd == nil {
			return fmt.Errorf("%s: no CRD has a schema to explain", path)
		}
		log("%s: %d CRDs of %d files, %.1f MiB of YAML; deepest field %s.%s; biggest group %s (%d CRDs)", set.name, len(set.crds), set.files,
			float64(set.yamlBytes)/(1<<20), t.explain.crd.Spec.Names.Plural, strings.Join(t.explain.path, "."), t.group, t.groupCRDs)
		var results []*crdSetResult
		for _, s := range stacks {
			fmt.Fprintf(os.Stderr, "== %s: %s\n", set.name, s.name())
			// A fresh data dir, whatever --work held.
			dir := filepath.Join(run.dir, set.name+"-"+strings.NewReplacer(" + ", "-", " ", "-").Replace(s.name()))
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			r, err := measureCRDSet(s, set, t, dir, run)
			s.stop()
			if err != nil {
				return fmt.Errorf("%s: %s: %w", set.name, s.name(), err)
			}
			results = append(results, r)
		}
		reportCRDSet(os.Stdout, set, t, run, results, upstreamDir)
	}
	return nil
}

// measureCRDSet starts s on a fresh dir and measures every figure of the
// set, in this order: 1–4 (create, established and in discovery, CPU,
// RSS), 5 (the first lists), 6 (api-resources), 8 (the OpenAPI document,
// before explain reads any), 7 (explain), 9 (informers), 10 (objects),
// 11 (restart).
func measureCRDSet(s stack, set *crdSet, t crdSetTargets, dir string, run crdSetRun) (*crdSetResult, error) {
	r := &crdSetResult{name: s.name()}
	ready, err := s.start(dir)
	if err != nil {
		return nil, err
	}
	log("ready in %v", ready.Round(time.Millisecond))
	time.Sleep(idleWait)
	r.rssBefore = rss(s.pids())
	log("RSS before the CRDs %.0f MiB", r.rssBefore)
	crds, err := install(s, set.crds, r)
	if err != nil {
		return nil, err
	}
	settle := func(what string) float64 {
		time.Sleep(run.settle)
		v := rss(s.pids())
		log("RSS %s, %v after: %.0f MiB (%.2f MiB per CRD)", what, run.settle, v, (v-r.rssBefore)/float64(r.crds))
		return v
	}
	r.rssIdle = settle("idle")
	kubectls, fulls := listPicks(crds)
	if r.firstList, err = firstLists(s.config(), kubectls, kubectlList); err != nil {
		return nil, err
	}
	if r.firstFullList, err = firstLists(s.config(), fulls, fullList); err != nil {
		return nil, err
	}
	scratch := filepath.Join(run.dir, "scratch")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return nil, err
	}
	var lines int
	if r.apiResources, lines, err = kubectl(run.gcp, s.kubeconfig(), scratch, "api-resources"); err != nil {
		return nil, err
	}
	log("kubectl api-resources, cold cache: %v (%d lines)", r.apiResources.Round(time.Millisecond), lines)
	if r.openAPI, err = openAPIGroup(s.config(), t.group, t.version); err != nil {
		return nil, err
	}
	args := explainArgs(t.explain, t.explain.path)
	if r.explain, lines, err = kubectl(run.gcp, s.kubeconfig(), scratch, args...); err != nil {
		return nil, err
	}
	log("kubectl %s: %v (%d lines)", strings.Join(args, " "), r.explain.Round(time.Millisecond), lines)
	args = append(explainArgs(t.explain, []string{"spec"}), "--recursive")
	if r.explainAll, lines, err = kubectl(run.gcp, s.kubeconfig(), scratch, args...); err != nil {
		return nil, err
	}
	log("kubectl %s: %v (%d lines)", strings.Join(args, " "), r.explainAll.Round(time.Millisecond), lines)
	synced, stopInformers, err := watchEveryKind(s.config(), crds)
	if err != nil {
		return nil, err
	}
	defer stopInformers()
	r.synced = synced
	log("%d metadata informers synced in %v", len(crds), synced.Round(time.Millisecond))
	r.rssWatched = settle("with every kind watched")
	if run.objects > 0 {
		if r.objectsOK, r.objectsSent, err = createObjects(s.config(), crds, run.objects); err != nil {
			return nil, err
		}
		r.rssObjects = settle("with objects")
	}
	stopInformers()
	if r.restart, err = restart(s, dir, crds); err != nil {
		return nil, err
	}
	return r, nil
}
