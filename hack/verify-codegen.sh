#!/usr/bin/env bash
# Fails, printing the difference, when the checked-in generated files differ
# from what hack/update-codegen.sh produces now. The same check runs as
# TestGeneratedCodeIsCurrent in pkg/controlplane/openapi under `go test`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

GCP_CODEGEN_OUTPUT_DIR="${tmp}" "${ROOT}/hack/update-codegen.sh"

status=0
diff -u "${ROOT}/pkg/controlplane/openapi/zz_generated.openapi.go" "${tmp}/zz_generated.openapi.go" || status=1
diff -u "${ROOT}/hack/api-rule-violations.list" "${tmp}/api-rule-violations.list" || status=1
if [[ "${status}" != 0 ]]; then
    echo "generated files are stale; run hack/update-codegen.sh" >&2
fi
exit "${status}"
