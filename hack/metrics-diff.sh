#!/usr/bin/env bash
# Compares the metric families gcp serves with upstream's, for the table in
# docs/operations.md ("Metrics"):
#   hack/metrics-diff.sh [GCP binary (default: built by hack/build.sh)] [UPSTREAM dir]
# UPSTREAM holds kube-apiserver, kube-controller-manager and etcd, as
# hack/bench/build-upstream.sh builds them (default: the newest it built in
# ~/.cache/gcp-bench). It starts etcd + kube-apiserver + kube-controller-manager
# (gcp's controllers only, leader-elected) and `gcp start` + `gcp controllers`
# (leader-elected, against the same gcp start), sends both the same few
# requests, scrapes every /metrics and prints, per pair, the families only
# upstream serves and those only gcp serves. Nothing is left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pids=()
# Stops what it started, last first (an API server stops slowly while its
# clients are connected, and hangs without its etcd), SIGKILL after 15 s.
cleanup() {
	local i p
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		p=${pids[i]}
		kill "$p" 2>/dev/null || continue
		for _ in $(seq 1 75); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

gcp=${1:-}
if [[ -z $gcp ]]; then
	gcp=$work/gcp
	hack/build.sh "$gcp"
fi
up=${2:-$(ls -d "$HOME"/.cache/gcp-bench/bin-* 2>/dev/null | sort -V | tail -1)}
[[ -x $up/kube-apiserver ]] || { echo "no kube-apiserver in '$up'; run hack/bench/build-upstream.sh" >&2; exit 1; }

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# scrape URL PKI: the family names of a /metrics, one a line, sorted.
scrape() {
	curl -fsS --cacert "$2/ca.crt" --cert "$2/admin.crt" --key "$2/admin.key" "$1/metrics" |
		sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' | sort -u
}
# scrapeinsecure URL PKI: as scrape, for a server whose serving certificate is self-signed.
scrapeinsecure() {
	curl -fsSk --cert "$2/admin.crt" --key "$2/admin.key" "$1/metrics" | sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' | sort -u
}
waitfor() { # URL PKI [insecure]
	local tls=(--cacert "$2/ca.crt")
	[[ -n ${3:-} ]] && tls=(-k)
	for _ in $(seq 1 600); do
		if curl -fsS "${tls[@]}" --cert "$2/admin.crt" --key "$2/admin.key" "$1/healthz" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	echo "$1 never became ready; logs in $work" >&2
	trap - EXIT
	exit 1
}
# traffic KUBECONFIG: the same requests on both sides, so that families whose
# series appear only on first use are served.
traffic() {
	local k=("$gcp" kubectl --kubeconfig "$1")
	"${k[@]}" create namespace metrics-diff >/dev/null
	"${k[@]}" -n metrics-diff create configmap c --from-literal=a=b >/dev/null
	"${k[@]}" -n metrics-diff get configmaps,secrets,serviceaccounts -o name >/dev/null
	"${k[@]}" -n metrics-diff get configmaps --watch --request-timeout=2s >/dev/null 2>&1 || true
	"${k[@]}" -n metrics-diff create configmap bad --from-literal=a=b --dry-run=server -o name >/dev/null
	"${k[@]}" get --raw /apis >/dev/null
	"${k[@]}" delete namespace metrics-diff --wait=true >/dev/null
}

# Upstream: etcd, kube-apiserver, kube-controller-manager.
u=$work/upstream
uport=$(freeport) kport=$(freeport) eport=$(freeport) emport=$(freeport) peer=$(freeport)
"$gcp" pki init --dir "$u/pki" --server "https://127.0.0.1:$uport" >/dev/null
"$up/etcd" --data-dir "$u/etcd" --listen-client-urls "http://127.0.0.1:$eport" --advertise-client-urls "http://127.0.0.1:$eport" \
	--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
	--initial-cluster "default=http://127.0.0.1:$peer" --listen-metrics-urls "http://127.0.0.1:$emport" >"$u.etcd.log" 2>&1 &
pids+=($!)
p=$u/pki
"$up/kube-apiserver" --etcd-servers "http://127.0.0.1:$eport" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
	--secure-port "$uport" --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" --client-ca-file "$p/ca.crt" \
	--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$p/sa.pub" \
	--service-account-signing-key-file "$p/sa.key" --authorization-mode RBAC --service-cluster-ip-range 10.96.0.0/16 \
	--endpoint-reconciler-type none --cert-dir "$u/certs" \
	--requestheader-client-ca-file "$p/front-proxy-ca.crt" --proxy-client-cert-file "$p/front-proxy-client.crt" \
	--proxy-client-key-file "$p/front-proxy-client.key" --requestheader-allowed-names front-proxy-client \
	--requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
	--requestheader-extra-headers-prefix X-Remote-Extra- >"$u.apiserver.log" 2>&1 &
pids+=($!)
waitfor "https://127.0.0.1:$uport" "$p"
controllers=$("$gcp" controllers --help | sed -n 's/^ *All controllers: //p' | tr -d ' ')
"$up/kube-controller-manager" --kubeconfig "$u/admin.kubeconfig" --authentication-kubeconfig "$u/admin.kubeconfig" \
	--authorization-kubeconfig "$u/admin.kubeconfig" --controllers "$controllers" --leader-elect=true \
	--bind-address 127.0.0.1 --secure-port "$kport" --cert-dir "$u/kcm-certs" --service-account-private-key-file "$p/sa.key" \
	--root-ca-file "$p/ca.crt" --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" >"$u.kcm.log" 2>&1 &
pids+=($!)
waitfor "https://127.0.0.1:$kport" "$p" insecure

# gcp: gcp start (its controllers too), and gcp controllers against it.
g=$work/gcp-data
gport=$(freeport) cport=$(freeport)
"$gcp" start --data-dir "$g" --secure-port "$gport" >"$g.start.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do [[ -f $g/pki/admin.key ]] && break; sleep 0.2; done
waitfor "https://127.0.0.1:$gport" "$g/pki"
"$gcp" controllers --kubeconfig "$g/admin.kubeconfig" --leader-elect=true --leader-elect-resource-name metrics-diff \
	--bind-address 127.0.0.1 --secure-port "$cport" --cert-dir "$g/controllers-certs" >"$g.controllers.log" 2>&1 &
pids+=($!)
waitfor "https://127.0.0.1:$cport" "$g/pki" insecure

traffic "$u/admin.kubeconfig"
traffic "$g/admin.kubeconfig"
# The controllers' first syncs and leader election's first renewal.
sleep 15

scrape "https://127.0.0.1:$uport" "$p" >"$work/kube-apiserver"
curl -fsS "http://127.0.0.1:$emport/metrics" | sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' | sort -u >"$work/etcd"
scrapeinsecure "https://127.0.0.1:$kport" "$p" >"$work/kube-controller-manager"
scrape "https://127.0.0.1:$gport" "$g/pki" >"$work/gcp-start"
scrapeinsecure "https://127.0.0.1:$cport" "$g/pki" >"$work/gcp-controllers"

report() { # TITLE UPSTREAM GCP
	echo "## $1: $(wc -l <"$2") upstream, $(wc -l <"$3") gcp"
	echo "### only upstream"
	comm -23 "$2" "$3"
	echo "### only gcp"
	comm -13 "$2" "$3"
	echo
}
sort -u "$work/kube-apiserver" "$work/etcd" >"$work/upstream-all"
report "gcp start vs kube-apiserver + its etcd" "$work/upstream-all" "$work/gcp-start"
report "gcp controllers vs kube-controller-manager" "$work/kube-controller-manager" "$work/gcp-controllers"
