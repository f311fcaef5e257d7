#!/usr/bin/env bash
# Runs every Go benchmark of the module once (-benchtime 1x). It measures
# nothing: a benchmark that no longer runs (a limit it now exceeds, an API it
# no longer fits) fails here, in CI, instead of on the day someone measures
# with it. Packages are found by their Benchmark functions, so a new one is in.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t pkgs < <(grep -rl --include='*_test.go' '^func Benchmark' cmd commands pkg internal test |
	xargs -n1 dirname | sort -u | sed 's|^|./|')
exec go test -timeout 20m -run '^$' -bench . -benchtime 1x "${pkgs[@]}"
