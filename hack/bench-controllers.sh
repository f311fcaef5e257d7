#!/usr/bin/env bash
# Runs hack/bench-controllers (namespace deletion and garbage collection
# times) against a fresh `gcp start`, and, when KUBE_APISERVER and
# KUBE_CONTROLLER_MANAGER name upstream binaries, against upstream
# kube-apiserver + kube-controller-manager on a `gcp etcd` member, once
# with kube-controller-manager's default client QPS (20/30) and once with
# gcp's (50/100). Everything listens on 127.0.0.1 only.
#
#   hack/bench-controllers.sh [harness flags, e.g. --objects 1000 --runs 3]
#   KUBE_APISERVER=/tmp/upstream/kube-apiserver \
#   KUBE_CONTROLLER_MANAGER=/tmp/upstream/kube-controller-manager hack/bench-controllers.sh
#
# BENCH_KEEP=1 keeps the work directory (logs, PKI) and prints its path.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
pids=()
cleanup() {
  local i
  for (( i=${#pids[@]}-1; i>=0; i-- )); do stop "${pids[i]}"; done
  if [ "${BENCH_KEEP:-}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# stop PID: SIGTERM, then SIGKILL after 20 s.
stop() {
  kill -0 "$1" 2>/dev/null || return 0
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 200); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_for WHAT PID LOG CMD...: runs CMD until it succeeds; fails if PID exits or after 120 s.
wait_for() {
  local what=$1 pid=$2 log=$3; shift 3
  for _ in $(seq 1200); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { echo "$what exited:" >&2; tail -20 "$log" >&2; exit 1; }
    sleep 0.1
  done
  echo "timed out waiting for $what" >&2; tail -20 "$log" >&2; exit 1
}

# bench NAME KUBECONFIG: waits until the controllers work (the serviceaccount
# controller made default/default), then runs the harness.
bench() {
  local name=$1 kc=$2; shift 2
  wait_for "$name service account default/default" "${pids[-1]}" /dev/null \
    "$work/gcp" kubectl --kubeconfig "$kc" -n default get serviceaccount default
  echo "== $name"
  "$work/bench" --kubeconfig "$kc" "${bench_args[@]}"
}

bench_args=("$@")
echo "building gcp and the harness" >&2
hack/build.sh "$work/gcp"
go build -o "$work/bench" ./hack/bench-controllers

# gcp: everything in one process.
p=$(port)
"$work/gcp" start --data-dir "$work/gcp-data" --secure-port "$p" >"$work/gcp.log" 2>&1 &
pids+=($!)
wait_for "gcp start" "${pids[-1]}" "$work/gcp.log" curl -sfk "https://127.0.0.1:$p/readyz"
bench "gcp start" "$work/gcp-data/admin.kubeconfig"
stop "${pids[-1]}"; unset 'pids[-1]'

if [ -z "${KUBE_APISERVER:-}" ] || [ -z "${KUBE_CONTROLLER_MANAGER:-}" ]; then
  echo "KUBE_APISERVER / KUBE_CONTROLLER_MANAGER not set: upstream skipped" >&2
  exit 0
fi

# Upstream PKI: a CA, the serving cert, admin (system:masters) and
# controller-manager client certs, and the service account key.
pki=$work/pki; mkdir -p "$pki"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bench-ca -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
cert() { # NAME SUBJECT EXTENSIONS
  openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 1 \
    -extfile <(printf '%b' "$3") -out "$pki/$1.crt" 2>/dev/null
}
cert apiserver /CN=kube-apiserver 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'
cert admin /O=system:masters/CN=bench-admin 'extendedKeyUsage=clientAuth'
cert kcm /CN=system:kube-controller-manager 'extendedKeyUsage=clientAuth'
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
kubeconfig() { # NAME URL
  cat >"$work/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: bench, cluster: {server: "$2", certificate-authority: "$pki/ca.crt"}}]
users: [{name: $1, user: {client-certificate: "$pki/$1.crt", client-key: "$pki/$1.key"}}]
contexts: [{name: bench, context: {cluster: bench, user: $1}}]
current-context: bench
EOF
}

# etcd: a gcp etcd member on a unix socket (no TLS), as gcp start uses its own.
"$work/gcp" etcd --data-dir "$work/etcd" --listen-client-urls "unix://$work/etcd.sock" >"$work/etcd.log" 2>&1 &
pids+=($!)
wait_for "gcp etcd" "${pids[-1]}" "$work/etcd.log" test -S "$work/etcd.sock"

p=$(port)
url=https://127.0.0.1:$p
kubeconfig admin "$url"; kubeconfig kcm "$url"
"$KUBE_APISERVER" --etcd-servers "unix://$work/etcd.sock" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$p" --cert-dir "$work/apiserver-certs" \
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
  --service-account-signing-key-file "$pki/sa.key" --authorization-mode RBAC --endpoint-reconciler-type none \
  >"$work/kube-apiserver.log" 2>&1 &
pids+=($!)
wait_for kube-apiserver "${pids[-1]}" "$work/kube-apiserver.log" curl -sfk "$url/readyz"

version=$("$KUBE_APISERVER" --version)
for qps in "" "--kube-api-qps=50 --kube-api-burst=100"; do
  log=$work/kube-controller-manager${qps:+-qps50}.log
  kp=$(port)
  # shellcheck disable=SC2086 # $qps is a list of flags
  "$KUBE_CONTROLLER_MANAGER" --kubeconfig "$work/kcm.kubeconfig" \
    --authentication-kubeconfig "$work/kcm.kubeconfig" --authorization-kubeconfig "$work/kcm.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$kp" --leader-elect=false --use-service-account-credentials \
    --controllers namespace-controller,garbage-collector-controller,serviceaccount-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" $qps \
    >"$log" 2>&1 &
  pids+=($!)
  wait_for kube-controller-manager "${pids[-1]}" "$log" curl -sfk "https://127.0.0.1:$kp/healthz"
  bench "upstream $version, kube-controller-manager ${qps:-with default QPS 20/30}" "$work/admin.kubeconfig"
  stop "${pids[-1]}"; unset 'pids[-1]'
done
