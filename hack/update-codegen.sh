#!/usr/bin/env bash
# Regenerates the OpenAPI definitions of the served types into
# pkg/controlplane/openapi/zz_generated.openapi.go and the API rule
# violation report into hack/api-rule-violations.list.
#
# Environment:
#   GCP_CODEGEN_OUTPUT_DIR  write both files into this directory instead of
#                           their checked-in places (used by the staleness
#                           test in pkg/controlplane/openapi, so the script
#                           stays the one definition of how code is generated).
#
# Runs from any working directory, offline, with only Go and the module cache:
# openapi-gen is a `tool` in go.mod.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

MODULE="github.com/gcp-project/gcp"
OPENAPI_PKG="pkg/controlplane/openapi"

# Packages whose types get OpenAPI definitions: every group/version the server
# serves, plus what their types refer to. Keep sorted; add a group here when
# a layer starts serving it. A missing referenced package shows up as a
# dangling $ref in pkg/controlplane/openapi's tests.
OPENAPI_INPUT_PKGS=(
    k8s.io/api/admissionregistration/v1
    k8s.io/api/apiserverinternal/v1alpha1
    k8s.io/api/authentication/v1
    k8s.io/api/authorization/v1
    k8s.io/api/autoscaling/v1
    k8s.io/api/certificates/v1
    k8s.io/api/coordination/v1
    k8s.io/api/coordination/v1beta1
    k8s.io/api/core/v1
    k8s.io/api/events/v1
    k8s.io/api/flowcontrol/v1
    k8s.io/api/rbac/v1
    k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1
    k8s.io/apimachinery/pkg/api/resource
    k8s.io/apimachinery/pkg/apis/meta/v1
    k8s.io/apimachinery/pkg/runtime
    k8s.io/apimachinery/pkg/util/intstr
    k8s.io/apimachinery/pkg/version
    k8s.io/kube-aggregator/pkg/apis/apiregistration/v1
)

output_dir="${ROOT}/${OPENAPI_PKG}"
report_file="${ROOT}/hack/api-rule-violations.list"
if [[ -n "${GCP_CODEGEN_OUTPUT_DIR:-}" ]]; then
    output_dir="${GCP_CODEGEN_OUTPUT_DIR}"
    report_file="${GCP_CODEGEN_OUTPUT_DIR}/api-rule-violations.list"
fi
mkdir -p "${output_dir}"

# Notes on the flags:
# - The input packages carry +k8s:openapi-model-package tags and ship their
#   generated OpenAPIModelName() methods, so definitions are keyed by the
#   canonical names (io.k8s.api.core.v1.ConfigMap) without
#   --output-model-name-file, which would try to write into the module cache.
# - With --report-filename set, API rule violations (all in upstream types we
#   cannot change) are written to the report instead of failing the run. The
#   report is checked in, so a library bump that changes it is a visible diff.
# - No --go-header-file: the generator adds "Code generated ... DO NOT EDIT.".
go tool openapi-gen \
    --output-dir "${output_dir}" \
    --output-pkg "${MODULE}/${OPENAPI_PKG}" \
    --output-file zz_generated.openapi.go \
    --report-filename "${report_file}" \
    "${OPENAPI_INPUT_PKGS[@]}"
