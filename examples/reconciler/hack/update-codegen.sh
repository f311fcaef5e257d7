#!/usr/bin/env bash
# Regenerates api/v1/zz_generated.deepcopy.go with deepcopy-gen, a `tool`
# in go.mod (k8s.io/code-generator at the k8s.io version of the module), so
# it runs offline with only Go and the module cache.
#
# Environment:
#   RECONCILER_CODEGEN_OUTPUT_DIR  write zz_generated.deepcopy.go into this
#                                  directory instead of api/v1 (used by
#                                  hack/verify-codegen.sh). deepcopy-gen
#                                  writes into the package it reads, so the
#                                  module is generated in a scratch copy.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

MODULE="example.dev/reconciler"
API_PKG="api/v1"

# generate regenerates the deepcopy functions in the module at $1. No
# --go-header-file: deepcopy-gen adds "Code generated ... DO NOT EDIT.".
generate() {
    cd "$1"
    go tool deepcopy-gen \
        --output-file zz_generated.deepcopy.go \
        "${MODULE}/${API_PKG}"
}

if [[ -z "${RECONCILER_CODEGEN_OUTPUT_DIR:-}" ]]; then
    generate "${ROOT}"
    exit 0
fi

output_dir="${RECONCILER_CODEGEN_OUTPUT_DIR}"
mkdir -p "${output_dir}"
gcp_root="$(cd "${ROOT}/../.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
cp -R "${ROOT}/." "${scratch}/"
# The copy's relative replace would point nowhere; point it at gcp.
(cd "${scratch}" && go mod edit -replace "github.com/gcp-project/gcp=${gcp_root}")
(generate "${scratch}")
cp "${scratch}/${API_PKG}/zz_generated.deepcopy.go" "${output_dir}/"
