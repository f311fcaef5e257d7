#!/usr/bin/env bash
# Runs the chaos test longer than CI does (not run in CI): the split shape
# (three `gcp etcd`, two `gcp apiserver`, two `gcp controllers`) while
# random parts are SIGKILLed, SIGSTOPped and restarted under a client load,
# then porcupine checks that the clients' history is linearizable and the
# watchers' histories agree. Run from anywhere:
#   hack/chaos.sh [duration] [seed]     # 10m and a random seed by default
# A failing run prints its seed (run it again with the same seed to follow
# the same faults and operations, timing aside) and writes porcupine's
# visualization of the history to chaos-<seed>.html in the working directory.
set -euo pipefail
duration=${1:-10m}
seed=${2:-}
out=$PWD
cd "$(dirname "$0")/.."
if [ -n "$seed" ]; then
  export GCP_CHAOS_SEED=$seed
fi
GCP_CHAOS=$duration GCP_CHAOS_REPORT=$out go test ./test/e2e -run '^TestChaos$' -count=1 -v -timeout 0 | grep -v '^=== '
