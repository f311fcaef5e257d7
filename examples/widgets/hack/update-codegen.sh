#!/usr/bin/env bash
# Regenerates the example's generated code with the official generators:
#   apis/widgets/v1/zz_generated.deepcopy.go    deepcopy-gen
#   apis/widgets/v1/zz_generated.model_name.go  openapi-gen (OpenAPIModelName methods)
#   openapi/zz_generated.openapi.go             openapi-gen (definitions)
#   hack/api-rule-violations.list               openapi-gen (API rule report)
#
# Environment:
#   WIDGETS_CODEGEN_OUTPUT_DIR  write the four files, by their base names,
#                               into this directory instead of their
#                               checked-in places (hack/verify-codegen.sh).
#                               deepcopy-gen and the model name generator
#                               write into the package they read, so the
#                               module is generated in a scratch copy.
#
# Runs from any working directory, offline, with only Go and the module
# cache: both generators are `tool`s in go.mod.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

MODULE="example.dev/widgets"
API_PKG="apis/widgets/v1"
OPENAPI_PKG="openapi"

# Packages whose types the API types refer to (see the notes on the
# openapi-gen flags below). Keep sorted; openapi's tests fail on a ref
# that does not resolve against gcp's definitions.
OPENAPI_REFERENCED_PKGS=(
    k8s.io/apimachinery/pkg/apis/meta/v1
)

# generate regenerates every file in place in the module at $1.
generate() {
    local dir="$1"
    cd "${dir}"

    # The deepcopy functions of the types (+k8s:deepcopy-gen tags).
    go tool deepcopy-gen \
        --output-file zz_generated.deepcopy.go \
        "${MODULE}/${API_PKG}"

    # Notes on the flags:
    # - Our package is an input, and so is every package whose types ours
    #   refer to (OPENAPI_REFERENCED_PKGS), as upstream's kube_codegen.sh
    #   does: openapi-gen names a referenced type by its canonical model
    #   name (io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta) only when
    #   it reads that type's package as an input; otherwise it refers to it
    #   by Go path (k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta), a
    #   name no definition has, and the server fails to build its OpenAPI.
    #   The referenced packages' own definitions land in the generated file
    #   too; gcp keeps its own for those names (composition
    #   GetOpenAPIDefinitions), so the layer passes the generated function
    #   as it is.
    # - --output-model-name-file generates OpenAPIModelName() into our
    #   package, from its +k8s:openapi-model-package tag, so our definitions
    #   are keyed dev.example.widgets.v1.Widget rather than by Go path;
    #   --readonly-pkg keeps it out of the module cache.
    # - With --report-filename set, API rule violations are written to the
    #   report instead of failing the run; the report is checked in.
    # - No --go-header-file: the generators add "Code generated ... DO NOT EDIT.".
    local readonly_args=()
    for pkg in "${OPENAPI_REFERENCED_PKGS[@]}"; do
        readonly_args+=(--readonly-pkg "${pkg}")
    done
    go tool openapi-gen \
        --output-dir "${dir}/${OPENAPI_PKG}" \
        --output-pkg "${MODULE}/${OPENAPI_PKG}" \
        --output-file zz_generated.openapi.go \
        --output-model-name-file zz_generated.model_name.go \
        "${readonly_args[@]}" \
        --report-filename "${dir}/hack/api-rule-violations.list" \
        "${OPENAPI_REFERENCED_PKGS[@]}" \
        "${MODULE}/${API_PKG}"
}

if [[ -z "${WIDGETS_CODEGEN_OUTPUT_DIR:-}" ]]; then
    generate "${ROOT}"
    exit 0
fi

output_dir="${WIDGETS_CODEGEN_OUTPUT_DIR}"
mkdir -p "${output_dir}"
gcp_root="$(cd "${ROOT}/../.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
cp -R "${ROOT}/." "${scratch}/"
# The copy's relative replace would point nowhere; point it at gcp.
(cd "${scratch}" && go mod edit -replace "github.com/gcp-project/gcp=${gcp_root}")
(generate "${scratch}")
cp "${scratch}/${API_PKG}/zz_generated.deepcopy.go" \
    "${scratch}/${API_PKG}/zz_generated.model_name.go" \
    "${scratch}/${OPENAPI_PKG}/zz_generated.openapi.go" \
    "${scratch}/hack/api-rule-violations.list" \
    "${output_dir}/"
