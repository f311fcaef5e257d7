#!/usr/bin/env bash
# Builds the upstream peers gcp is measured against, from the Go module proxy,
# in a throwaway module outside gcp's module graph (gcp never imports
# k8s.io/kubernetes): kube-apiserver and kube-controller-manager from
# k8s.io/kubernetes@$K8S_VERSION, and etcd from go.etcd.io/etcd/v3@$ETCD_VERSION
# (by default the etcd server version gcp embeds, from gcp's go.mod).
#   hack/bench/build-upstream.sh            # prints the directory with the binaries
# Env: K8S_VERSION (v1.37.1), ETCD_VERSION, GCP_BENCH_CACHE (~/.cache/gcp-bench).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
K8S_VERSION=${K8S_VERSION:-v1.37.1}
ETCD_VERSION=${ETCD_VERSION:-$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2}' "$repo/go.mod")}
cache=${GCP_BENCH_CACHE:-$HOME/.cache/gcp-bench}
bin="$cache/bin-$K8S_VERSION-etcd-$ETCD_VERSION"
if [[ -f $bin/VERSION ]]; then
  echo "$bin"
  exit 0
fi
export GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-local} GOWORK=off
mkdir -p "$bin"

# kube-apiserver and kube-controller-manager. k8s.io/kubernetes replaces its
# staging modules with ./staging/..., which does not hold for a dependency, so
# the throwaway module replaces each with its published v0.X.Y.
src="$cache/src-$K8S_VERSION"
mkdir -p "$src"
(cd "$src"
  go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
  kmod="$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION"
  gover=$(awk '/^go /{print $2; exit}' "$kmod/go.mod")
  staging="v0.${K8S_VERSION#v1.}"
  {
    echo "module upstreambench"
    echo
    echo "go $gover"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "$kmod/go.mod" | awk '/=> \.\/staging/{print $1}' | while read -r m; do
      if (cd / && GOFLAGS= go list -m "$m@$staging" >/dev/null 2>&1); then echo "	$m => $m $staging"; fi
    done
    echo ")"
  } > go.mod
  go build -o "$bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
  go build -o "$bin/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
)

# etcd: the go.etcd.io/etcd/server/v3 module's root package is the etcd server.
esrc="$cache/src-etcd-$ETCD_VERSION"
mkdir -p "$esrc"
(cd "$esrc"
  printf 'module etcdbench\n\ngo 1.25\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > go.mod
  go build -o "$bin/etcd" go.etcd.io/etcd/server/v3
)
echo "kube-apiserver and kube-controller-manager $K8S_VERSION, etcd $ETCD_VERSION (built with $(go env GOVERSION))" > "$bin/VERSION"
echo "$bin"
