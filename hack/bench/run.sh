#!/usr/bin/env bash
# Measures `gcp start` against upstream kube-apiserver + kube-controller-manager
# + etcd in one run on this machine and prints the table docs/performance.md
# shows. Builds the upstream binaries once (hack/bench/build-upstream.sh, into
# ~/.cache/gcp-bench) and gcp from this checkout. Arguments go to the
# measuring program (hack/bench/main.go), e.g.:
#   hack/bench/run.sh                                  # the full run (about 15 minutes on 2 cores)
#   hack/bench/run.sh --crds 100 --lists 3000 --duration 2s --rounds 1 --warm 1   # a quick one
#   hack/bench/run.sh --crds 100,300,1000              # with 1,000 CRDs
# With --crd-set it measures only a real CRD set's installation in each stack
# (kube-apiserver + etcd without kube-controller-manager; docs/performance.md,
# "Real CRD sets"); paths are relative to the repository root:
#   hack/bench/run.sh --crd-set hack/bench/crdsets/provider-upjet-azure.tar.xz
#   hack/bench/run.sh --crd-set hack/bench/crdsets/config-connector.tar.xz --crd-limit 100 --only gcp
set -euo pipefail
cd "$(dirname "$0")/../.."
upstream=$(hack/bench/build-upstream.sh | tail -1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
hack/build.sh "$work/gcp"
go build -o "$work/bench" ./hack/bench
echo "$ hack/bench/run.sh $*" >&2
"$work/bench" --gcp "$work/gcp" --upstream "$upstream" --work "$work/runs" "$@"
