#!/usr/bin/env bash
# Fails, printing the difference, when the checked-in generated code
# differs from what hack/update-codegen.sh produces now.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

RECONCILER_CODEGEN_OUTPUT_DIR="${tmp}" "${ROOT}/hack/update-codegen.sh"

if ! diff -u "${ROOT}/api/v1/zz_generated.deepcopy.go" "${tmp}/zz_generated.deepcopy.go"; then
    echo "generated code is stale; run hack/update-codegen.sh" >&2
    exit 1
fi
