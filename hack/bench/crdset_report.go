package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// crdSetRow is one figure of the --crd-set table.
type crdSetRow struct {
	what  string
	unit  string // as num takes it; "" for a count
	value func(*crdSetResult) float64
	// perCRD adds a row of the figure less the RSS before the CRDs,
	// per CRD created.
	perCRD bool
}

func crdSetRows(set *crdSet, t crdSetTargets, run crdSetRun, results []*crdSetResult) []crdSetRow {
	sec := func(f func(*crdSetResult) time.Duration) func(*crdSetResult) float64 {
		return func(r *crdSetResult) float64 { return f(r).Seconds() }
	}
	msec := func(f func(*crdSetResult) time.Duration) func(*crdSetResult) float64 {
		return func(r *crdSetResult) float64 { return ms(f(r)) }
	}
	idle := fmt.Sprintf("%g s", run.settle.Seconds())
	kubectls, fulls := listPicks(set.crds)
	deep := t.explain.crd.Spec.Names.Plural + "." + strings.Join(t.explain.path, ".")
	rows := []crdSetRow{
		{what: fmt.Sprintf("CRDs created (of %d)", len(set.crds)), value: func(r *crdSetResult) float64 { return float64(r.crds) }},
		{what: fmt.Sprintf("RSS %g s after start, before the CRDs", idleWait.Seconds()), unit: "MiB", value: func(r *crdSetResult) float64 { return r.rssBefore }},
		{what: "all created (first create to last answer, 8 at a time)", unit: "s", value: sec(func(r *crdSetResult) time.Duration { return r.created })},
		{what: "all Established and in discovery", unit: "s", value: sec(func(r *crdSetResult) time.Duration { return r.discovered })},
		{what: "CPU used until then (user + system)", unit: "s", value: sec(func(r *crdSetResult) time.Duration { return r.cpu })},
		{what: "RSS peak while creating", unit: "MiB", value: func(r *crdSetResult) float64 { return r.rssPeak }, perCRD: true},
		{what: fmt.Sprintf("RSS idle, %s after all in discovery", idle), unit: "MiB", value: func(r *crdSetResult) float64 { return r.rssIdle }, perCRD: true},
		{what: fmt.Sprintf("first list's cost over the second (kubectl get's, limit 500), median of %d CRDs", len(kubectls)), unit: "ms", value: msec(func(r *crdSetResult) time.Duration { return r.firstList.median })},
		{what: "… the highest", unit: "ms", value: msec(func(r *crdSetResult) time.Duration { return r.firstList.highest })},
		{what: fmt.Sprintf("first list's cost over the second, no limit, median of %d other CRDs", len(fulls)), unit: "ms", value: msec(func(r *crdSetResult) time.Duration { return r.firstFullList.median })},
		{what: "… the highest", unit: "ms", value: msec(func(r *crdSetResult) time.Duration { return r.firstFullList.highest })},
		{what: "kubectl api-resources, cold cache", unit: "s", value: sec(func(r *crdSetResult) time.Duration { return r.apiResources })},
		{what: fmt.Sprintf("first GET of /openapi/v3/apis/%s/%s (%d CRDs)", t.group, t.version, t.groupCRDs), unit: "s", value: sec(func(r *crdSetResult) time.Duration { return r.openAPI })},
		{what: fmt.Sprintf("kubectl explain %s (%d deep), cold cache", deep, len(t.explain.path)), unit: "s", value: sec(func(r *crdSetResult) time.Duration { return r.explain })},
		{what: fmt.Sprintf("kubectl explain %s.spec --recursive, cold cache", t.explain.crd.Spec.Names.Plural), unit: "s", value: sec(func(r *crdSetResult) time.Duration { return r.explainAll })},
		{what: "a metadata informer on every kind, all synced", unit: "s", value: sec(func(r *crdSetResult) time.Duration { return r.synced })},
		{what: fmt.Sprintf("RSS with every kind watched, %s after", idle), unit: "MiB", value: func(r *crdSetResult) float64 { return r.rssWatched }, perCRD: true},
	}
	if run.objects > 0 {
		rows = append(rows,
			crdSetRow{what: fmt.Sprintf("objects accepted, one each of %d CRDs", results[0].objectsSent), value: func(r *crdSetResult) float64 { return float64(r.objectsOK) }},
			crdSetRow{what: fmt.Sprintf("RSS with those objects and every kind watched, %s after", idle), unit: "MiB", value: func(r *crdSetResult) float64 { return r.rssObjects }, perCRD: true})
	}
	return append(rows, crdSetRow{what: "restart: ready with every CRD served", unit: "s", value: sec(func(r *crdSetResult) time.Duration { return r.restart })})
}

// reportCRDSet prints the table of one set: a column for each stack
// and, with two, gcp's figure as a ratio of upstream's.
func reportCRDSet(w io.Writer, set *crdSet, t crdSetTargets, run crdSetRun, results []*crdSetResult, upstreamDir string) {
	fmt.Fprintf(w, "\n%s\n\n", machine(upstreamDir))
	fmt.Fprintf(w, "CRD set %s: %d CRDs (the first %d of %d files by name), %.1f MiB of YAML.\n\n", set.name, len(set.crds), len(set.crds), set.files, float64(set.yamlBytes)/(1<<20))
	header, rule := "| measurement |", "| --- |"
	for _, r := range results {
		header += " " + r.name + " |"
		rule += " --- |"
	}
	if len(results) == 2 {
		header += " gcp ÷ upstream |"
		rule += " --- |"
	}
	fmt.Fprintf(w, "%s\n%s\n", header, rule)
	for _, row := range crdSetRows(set, t, run, results) {
		fmt.Fprintln(w, tableRow(row.what, row.unit, results, row.value))
		if row.perCRD {
			fmt.Fprintln(w, tableRow("… per CRD (less the RSS before the CRDs)", "MiB", results, func(r *crdSetResult) float64 {
				return (row.value(r) - r.rssBefore) / float64(max(1, r.crds))
			}))
		}
	}
}

// tableRow is one row of a table: each result's value and, for two, the
// first's as a ratio of the second's.
func tableRow(what, unit string, results []*crdSetResult, value func(*crdSetResult) float64) string {
	cells := []string{what}
	for _, r := range results {
		if unit == "" {
			cells = append(cells, fmt.Sprintf("%.0f", value(r)))
		} else {
			cells = append(cells, num(value(r), unit))
		}
	}
	if len(results) == 2 {
		cells = append(cells, ratio(value(results[0]), value(results[1])))
	}
	return "| " + strings.Join(cells, " | ") + " |"
}

// ratio is g ÷ u for the table: two decimals, fewer once it is large,
// and "–" where it means nothing (a figure that is zero or less, or not
// a number).
func ratio(g, u float64) string {
	r := g / u
	switch {
	case g <= 0 || u <= 0 || math.IsNaN(r) || math.IsInf(r, 0):
		return "–"
	case r >= 99.5: // what rounds to 100 or more
		return fmt.Sprintf("%.0f", r)
	case r >= 9.995:
		return fmt.Sprintf("%.1f", r)
	default:
		return fmt.Sprintf("%.2f", r)
	}
}
