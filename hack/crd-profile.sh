#!/usr/bin/env bash
# Where the memory of N CRDs goes in `gcp start`: heap and goroutine profiles
# of an idle server before and 25 s after `gcp kubectl create` of N CRDs of
# hack/bench's shape (each in a group of its own), and its RSS and runtime
# memory statistics after.
#
# usage: hack/crd-profile.sh [N (default 300)] [OUT dir (default a new temp dir)]
# then:  go tool pprof -sample_index=inuse_space -top -base OUT/heap-before.pprof OUT/heap-after.pprof
set -euo pipefail
N=${1:-300}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
hack/build.sh "$OUT/gcp"
DATA=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$OUT/gcp" start --data-dir "$DATA" --secure-port "$PORT" --profiling >"$OUT/gcp.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
get() { curl -sfk --cert "$DATA/pki/admin.crt" --key "$DATA/pki/admin.key" "https://127.0.0.1:$PORT$1"; }
until [ "$(get /readyz 2>/dev/null)" = ok ]; do sleep 0.2; done
sleep 10
get "/debug/pprof/heap?gc=1" >"$OUT/heap-before.pprof"
get "/debug/pprof/goroutine" >"$OUT/goroutine-before.pprof"
grep -E 'VmRSS|RssAnon|RssFile' /proc/$PID/status >"$OUT/rss-before.txt"

for i in $(seq 0 $((N - 1))); do
  cat <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.g$i.bench.example.com}
spec:
  group: g$i.bench.example.com
  scope: Namespaced
  names: {plural: things, kind: Thing}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}, name: {type: string}, items: {type: array, items: {type: string}}}}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
EOF
done >"$OUT/crds.yaml"
KUBECONFIG=$DATA/admin.kubeconfig "$OUT/gcp" kubectl create -f "$OUT/crds.yaml" >/dev/null
sleep 25

get "/debug/pprof/heap?gc=1" >"$OUT/heap-after.pprof"
get "/debug/pprof/goroutine" >"$OUT/goroutine-after.pprof"
grep -E 'VmRSS|RssAnon|RssFile' /proc/$PID/status >"$OUT/rss-after.txt"
get "/debug/pprof/heap?debug=1" | grep -E '^# (HeapAlloc|HeapInuse|HeapIdle|HeapReleased|Stack|NextGC|NumGC) ' >"$OUT/memstats-after.txt"
echo "== $N CRDs, profiles in $OUT"
paste "$OUT/rss-before.txt" "$OUT/rss-after.txt" | awk '{printf "%-9s %6.0f -> %6.0f MiB\n", $1, $2/1024, $5/1024}'
awk '{printf "%-13s %s\n", $2, ($4 > 1048576 ? sprintf("%.0f MiB", $4/1048576) : $4)}' "$OUT/memstats-after.txt"
echo "goroutines: $(go tool pprof -top "$OUT/goroutine-before.pprof" 2>/dev/null | grep -o '[0-9]* total' | head -1) -> $(go tool pprof -top "$OUT/goroutine-after.pprof" 2>/dev/null | grep -o '[0-9]* total' | head -1)"
