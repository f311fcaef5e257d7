#!/usr/bin/env bash
# Where `gcp start`'s CPU and allocations go while a real CRD set is
# installed (hack/bench/crdsets): a CPU profile of the SECONDS (default 80)
# from the first create, and allocation profiles before the creates and
# SECONDS after the first, with the set's CRDs created by `gcp kubectl
# create`, 50 files a call, 4 calls at a time. The garbage collector and
# quota controllers are off, as in `hack/bench/run.sh --crd-set`.
#
# usage: hack/crdset-profile.sh ARCHIVE [SECONDS] [OUT dir (default a new temp dir)]
# then:  go tool pprof -top -cum OUT/cpu.pprof
#        go tool pprof -sample_index=alloc_space -top -base OUT/allocs-before.pprof OUT/allocs-after.pprof
set -euo pipefail
ARCHIVE=$(realpath "$1")
SECONDS_=${2:-80}
OUT=${3:-$(mktemp -d)}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
hack/build.sh "$OUT/gcp"
DATA=$(mktemp -d)
SET=$(mktemp -d)
xz -dc "$ARCHIVE" | tar -x -C "$SET"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$OUT/gcp" start --data-dir "$DATA" --secure-port "$PORT" --profiling \
  --controllers='*,-garbage-collector-controller,-resourcequota-controller' >"$OUT/gcp.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA" "$SET"' EXIT
get() { curl -sfk --cert "$DATA/pki/admin.crt" --key "$DATA/pki/admin.key" "https://127.0.0.1:$PORT$1"; }
until [ "$(get /readyz 2>/dev/null)" = ok ]; do sleep 0.2; done
sleep 10
get /debug/pprof/allocs >"$OUT/allocs-before.pprof"
CPU0=$(awk '{print $14 + $15}' /proc/$PID/stat)
get "/debug/pprof/profile?seconds=$SECONDS_" >"$OUT/cpu.pprof" &
PROFILE=$!
START=$(date +%s.%N)
find "$SET" -name '*.yaml' | sort | xargs -P 4 -n 50 \
  sh -c 'KUBECONFIG='"$DATA"'/admin.kubeconfig "$0" kubectl create $(printf -- " -f %s" "$@") >/dev/null' "$OUT/gcp"
CREATED=$(date +%s.%N)
wait $PROFILE
get /debug/pprof/allocs >"$OUT/allocs-after.pprof"
CPU1=$(awk '{print $14 + $15}' /proc/$PID/stat)
echo "== $(find "$SET" -name '*.yaml' | wc -l) CRDs of $(basename "$ARCHIVE") created in $(echo "$CREATED - $START" | bc) s;" \
  "gcp used $(( (CPU1 - CPU0) / 100 )) s of CPU in the ${SECONDS_} s from the first create; profiles in $OUT"
