#!/bin/sh
# Usage: bench/check.sh [ROUNDS]
# Summary: what the fast containment probes cost `forge-sandbox up` (SPEC
# 4.6: budget 300 ms), against a plain `forge-sandbox exec -- true`, as
# medians over ROUNDS (default 10) runs each, and the full
# `forge-sandbox check` for comparison.
#
# A scratch repository with a private HOME gets a namespace sandbox (rootfs
# "host", an allow-list: no Docker, no slirp4netns needed), removed at the
# end. The fast probes are timed as up runs them: forge_check ... fast in a
# shell that has the library loaded and the plan made (up has both). The
# programs come from the build tree $FORGE_BUILD (default: next to this
# script), else from PATH. Exits 1 when the fast probes' median is over
# the budget.
set -eu

rounds=${1:-10}
budget=300
case $rounds in '' | *[!0-9]*) echo "usage: $0 [ROUNDS]" >&2; exit 64 ;; esac
[ "$rounds" -gt 0 ] || { echo "$0: ROUNDS must be > 0" >&2; exit 64; }

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
bench_use_build forge-probe forge-sandbox forge-shell bwrap git
lib=${FORGE_LIBDIR:-$(dirname -- "$(command -v forge-sandbox)")/../share/forge/lib-sh}

bench_scratch '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"allow": ["example.com"]}}}'
export TMPDIR="$tmp"
forge-sandbox up >/dev/null 2>&1 || { echo "$0: forge-sandbox up failed" >&2; exit 69; }

# timed VARIANT: one line per run, its wall time in microseconds.
timed() {
	case $1 in
	exec)
		i=0
		while [ "$i" -lt "$rounds" ]; do
			t0=$(date +%s%N)
			forge-sandbox exec -- true
			t1=$(date +%s%N)
			echo $(((t1 - t0) / 1000))
			i=$((i + 1))
		done
		;;
	fast)
		# As up runs them: the library loaded, the plan made, once.
		# shellcheck disable=SC2016 # a script for sh, with its arguments
		sh -c '
			set -eu
			forge_prog=bench
			. "$1/forge.sh"
			forge_sandbox_locate .
			forge_config_load "$forge_sandbox_root"
			forge_sandbox_backend bwrap
			forge_sandbox_prepare "$forge_sandbox_root" "$forge_sandbox_name"
			i=0
			while [ "$i" -lt "$2" ]; do
				t0=$(date +%s%N)
				forge_check "$forge_sandbox_root" "$forge_sandbox_name" bwrap fast ||
					{ echo "a fast probe got through: $forge_check_escaped" >&2; exit 1; }
				t1=$(date +%s%N)
				echo $(((t1 - t0) / 1000))
				i=$((i + 1))
			done' sh "$lib" "$rounds"
		;;
	check)
		i=0
		while [ "$i" -lt "$rounds" ]; do
			t0=$(date +%s%N)
			forge-sandbox check >/dev/null 2>&1 || :
			t1=$(date +%s%N)
			echo $(((t1 - t0) / 1000))
			i=$((i + 1))
		done
		;;
	esac
}

for v in exec fast check; do
	timed "$v" >"$tmp/$v"
done

awk -v e="$(bench_median "$tmp/exec")" -v f="$(bench_median "$tmp/fast")" -v c="$(bench_median "$tmp/check")" \
	-v b="$budget" -v n="$rounds" 'BEGIN {
	printf "median over %d runs each (milliseconds):\n", n
	printf "  forge-sandbox exec -- true                  %8.1f\n", e / 1000
	printf "  the fast probes, as up runs them            %8.1f  (budget %d)\n", f / 1000, b
	printf "  forge-sandbox check (every probe, a plan)   %8.1f\n", c / 1000
	printf "fast probes / exec true: %.1f\n", f / e
	exit (f / 1000 <= b) ? 0 : 1
}'
