#!/usr/bin/env bash
# Measures gcp's pkg/testserver side by side with controller-runtime's envtest
# in one run on this machine and prints the table docs/performance.md shows.
# envtest's kube-apiserver and etcd are the upstream peers that
# hack/bench/build-upstream.sh builds from the Go module proxy (once, into
# ~/.cache/gcp-bench). The measuring program is hack/bench/envtest/, a module of
# its own (controller-runtime never enters gcp's module graph) that uses this
# checkout's pkg/testserver. Arguments go to it, e.g.:
#   hack/bench/envtest.sh                      # 3 rounds, 3 starts per side per round
#   hack/bench/envtest.sh -rounds 5 -starts 5
set -euo pipefail
cd "$(dirname "$0")/../.."
upstream=$(hack/bench/build-upstream.sh | tail -1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd hack/bench/envtest && GOWORK=off go build -o "$work/envtestbench" .)
echo "$ hack/bench/envtest.sh $*  ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(cat "$upstream/VERSION"))" >&2
TMPDIR="$work" "$work/envtestbench" -assets "$upstream" "$@"
