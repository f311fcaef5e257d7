#!/usr/bin/env bash
# Measures `gcp start`: time to the first 200 from /readyz on an empty and on
# a warm data dir, and the process RSS after 10 s idle. Run from anywhere:
#   hack/bench-start.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
hack/build.sh "$work/gcp"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_and_time DATA_DIR: starts gcp, sets $pid and $ms (milliseconds to ready).
start_and_time() {
  local dir=$1 p t0
  p=$(port)
  t0=$(date +%s%N)
  "$work/gcp" start --data-dir "$dir" --secure-port "$p" >"$dir.log" 2>&1 &
  pid=$!
  until curl -sfk "https://127.0.0.1:$p/readyz" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { echo "gcp start exited:"; tail -5 "$dir.log"; exit 1; }
    sleep 0.02
  done
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}

stop() { kill -TERM "$pid"; wait "$pid" || true; }

for i in $(seq 1 "$runs"); do
  dir="$work/data$i"
  start_and_time "$dir"; cold=$ms
  stop
  start_and_time "$dir"; warm=$ms
  sleep 10
  rss=$(awk '/VmRSS/ {print int($2/1024)}' "/proc/$pid/status")
  stop
  echo "run $i: empty data dir ready in ${cold} ms, warm ready in ${warm} ms, idle RSS after 10 s ${rss} MiB"
done
