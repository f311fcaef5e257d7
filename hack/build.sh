#!/usr/bin/env bash
# Builds gcp as it is meant to ship:
#   hack/build.sh [OUTPUT (default ./gcp)] [go build flags...]   the binary
#   hack/build.sh image [--archive FILE]                         the container image
#
# The tag keeps Go plugin support out of kustomize, which `gcp kubectl` links
# for `-k`. The standard library's plugin package makes the linker keep every
# method of every reachable type and export every symbol (a dynamic symbol
# table of 25 MB): the binary is 197 MB instead of 155 MB and maps 6 MiB more
# of itself at idle. Kustomize's Go plugins (alpha, `--enable-alpha-plugins`)
# must be built against the exact binary that loads them; upstream's kubectl,
# built without cgo, cannot load them either. Exec and KRM function plugins are
# unaffected. A plain `go build ./cmd/gcp` works too, with plugin support.
#
# `image` builds the binary statically (CGO_ENABLED=0, -trimpath, no build
# ID), then hack/tools/image (a module of its own, so go-containerregistry
# stays out of gcp's go.mod) puts it on scratch as /usr/local/bin/gcp, named
# gcp:<gcp version>, the static pods' default --image. Every time in the
# image is the commit's (SOURCE_DATE_EPOCH, default the HEAD commit's time),
# so the same commit gives the same digest. With --archive the image is
# written to FILE (an OCI layout that is also a docker-archive); without it
# it is loaded into podman's store. See docs/deploy.md.
#
# Both build the same static binary, as Kubernetes builds its server
# binaries: no cgo (so no libc to match on the host or in the image; Go's
# own DNS resolver and user lookup), -trimpath and no build ID (so it is
# reproducible), and the image's build reuses every compiled package of
# the plain one (test/e2e builds both). CGO_ENABLED=1 in the environment
# gives a cgo binary; the image is always static.
set -euo pipefail
tags=kustomize_disable_go_plugin_support
flags=(-tags "$tags" -trimpath -ldflags=-buildid=)

if [[ ${1:-} != image ]]; then
	out=${1:-gcp}
	shift || true
	case $out in /*) ;; *) out=$PWD/$out ;; esac
	cd "$(dirname "$0")/.."
	CGO_ENABLED=${CGO_ENABLED:-0} exec go build "${flags[@]}" "$@" -o "$out" ./cmd/gcp
fi

shift
archive=
while (($#)); do
	case $1 in
	--archive) archive=${2:?--archive needs a file}; shift 2 ;;
	--archive=*) archive=${1#--archive=}; shift ;;
	*) echo "hack/build.sh image: unknown argument $1 (usage: hack/build.sh image [--archive FILE])" >&2; exit 1 ;;
	esac
done
if [[ -n $archive ]]; then
	case $archive in /*) ;; *) archive=$PWD/$archive ;; esac
elif ! command -v podman >/dev/null; then
	echo "hack/build.sh image: podman is not installed: give --archive FILE and load it with your runtime (docs/deploy.md)" >&2
	exit 1
fi
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The commit and its time go into the binary (gcp version) even where
# GOFLAGS says -buildvcs=false. Go stamps nothing in a linked git worktree
# (golang/go#58218), so the revision label and the times come from git
# here, not from the binary; outside a checkout SOURCE_DATE_EPOCH must be
# given.
vcs=false revision=
if git rev-parse --git-dir >/dev/null 2>&1; then
	vcs=true
	revision=$(git rev-parse HEAD)
	if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
		SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
		export SOURCE_DATE_EPOCH
	fi
	if [[ -n $(git status --porcelain --untracked-files=no) ]]; then
		echo "hack/build.sh image: warning: the tree has changes not in $revision; the image's revision label does not describe them" >&2
	fi
fi
CGO_ENABLED=0 GOOS=linux go build "${flags[@]}" -buildvcs=$vcs -o "$work/gcp" ./cmd/gcp
(cd hack/tools/image && go run . --binary "$work/gcp" --name gcp --revision "$revision" --archive "${archive:-$work/image.tar}")
if [[ -z $archive ]]; then
	podman load -i "$work/image.tar"
fi
