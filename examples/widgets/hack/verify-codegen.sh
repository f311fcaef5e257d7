#!/usr/bin/env bash
# Fails, printing the difference, when the checked-in generated files
# differ from what hack/update-codegen.sh produces now.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

WIDGETS_CODEGEN_OUTPUT_DIR="${tmp}" "${ROOT}/hack/update-codegen.sh"

status=0
for pair in \
    "apis/widgets/v1/zz_generated.deepcopy.go" \
    "apis/widgets/v1/zz_generated.model_name.go" \
    "openapi/zz_generated.openapi.go" \
    "hack/api-rule-violations.list"; do
    diff -u "${ROOT}/${pair}" "${tmp}/$(basename "${pair}")" || status=1
done
if [[ "${status}" != 0 ]]; then
    echo "generated files are stale; run hack/update-codegen.sh" >&2
fi
exit "${status}"
