#!/usr/bin/env bash
# Soaks `gcp start` (not run in CI): a bounded mixed load with its
# controllers running (ConfigMap create/get/update/list/delete in four
# namespaces, namespace churn, watches opened and closed, a Lease renewed
# every second, token requests and reviews, CRDs created and deleted),
# while the process's RSS, heap in use and goroutines are sampled. It fails
# unless they stay flat after the warm-up. Run from anywhere:
#   hack/soak.sh [duration]        # 30m by default
# The samples go to soak-<date>.csv in the working directory.
set -euo pipefail
duration=${1:-30m}
report=${GCP_SOAK_REPORT:-$PWD/soak-$(date +%Y%m%d-%H%M%S).csv}
cd "$(dirname "$0")/.."
GCP_SOAK=$duration GCP_SOAK_REPORT=$report \
  go test ./test/e2e -run '^TestSoak$' -count=1 -v -timeout 0 | grep -v '^=== '
echo "samples: $report"
