#!/bin/sh
# Usage: bench/state.sh [WRITERS [UPDATES]]
# Summary: concurrent `forge-state incr` against the obvious shell baseline
#
# WRITERS concurrent writers (default 16, or $WRITERS) each add 1 to one
# counter UPDATES times (default 200, or $UPDATES), first through
# `forge-state incr` (flock, temp file, fsync, rename, fsync of the
# directory), then through util-linux flock(1) around `sh -c` reading and
# rewriting the file in place (no fsync). Prints both wall times, the time
# per update, the ratio baseline/forge-state and each one's lost updates.
# forge-state is $FORGE_STATE, else helpers/forge-state of this tree, else
# the one on PATH. Exits 1 if forge-state lost an update.
set -eu

WRITERS="${1:-${WRITERS:-16}}"
UPDATES="${2:-${UPDATES:-200}}"

die() { printf 'bench/state.sh: error: %s\n' "$*" >&2; exit 64; }

for count in "$WRITERS" "$UPDATES"; do
	case $count in
	'' | *[!0-9]*) count=0 ;;
	esac
	[ "$count" -gt 0 ] || die "WRITERS and UPDATES must be positive whole numbers"
done

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${FORGE_STATE:-}" ]; then
	state=$FORGE_STATE
elif [ -x "$root/helpers/forge-state" ]; then
	state=$root/helpers/forge-state
else
	state=$(command -v forge-state) || die "forge-state not found: build it or set FORGE_STATE"
fi
command -v flock >/dev/null 2>&1 || die "flock(1) (util-linux) is needed for the baseline"
case "$(date +%N)" in
*[!0-9]*) die "date +%N (nanoseconds) is needed to time the runs" ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/forge-bench-state.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_ns() { date +%s%N; }

forge_writer() {
	i=0
	while [ "$i" -lt "$UPDATES" ]; do
		"$state" -w 600 incr "$work/forge" n >/dev/null
		i=$((i + 1))
	done
}

# The baseline: the lock is right, so it loses nothing, but the file is
# truncated and rewritten in place and never synced.
baseline_writer() {
	i=0
	while [ "$i" -lt "$UPDATES" ]; do
		# shellcheck disable=SC2016 # expanded by the inner sh, on purpose
		flock -w 600 "$work/baseline.lock" \
			sh -c 'IFS== read -r key value <"$1"; printf "n=%s\n" "$((value + 1))" >"$1"' \
			sh "$work/baseline"
		i=$((i + 1))
	done
}

# run WRITER: start WRITERS copies of WRITER at once, wait for all; prints ns.
run() {
	start=$(now_ns)
	pids=
	w=0
	while [ "$w" -lt "$WRITERS" ]; do
		"$1" &
		pids="$pids $!"
		w=$((w + 1))
	done
	failed=0
	for pid in $pids; do
		wait "$pid" || failed=1
	done
	[ "$failed" -eq 0 ] || die "a $1 failed"
	echo $(($(now_ns) - start))
}

total=$((WRITERS * UPDATES))
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?')
printf 'n=0\n' >"$work/baseline"

forge_ns=$(run forge_writer)
forge_final=$("$state" get "$work/forge" n 0)
base_ns=$(run baseline_writer)
base_final=$(sed -n 's/^n=//p' "$work/baseline")

awk -v writers="$WRITERS" -v updates="$UPDATES" -v total="$total" -v cpus="$cpus" \
	-v fns="$forge_ns" -v ffinal="$forge_final" \
	-v bns="$base_ns" -v bfinal="$base_final" 'BEGIN {
	printf "%d writers x %d increments = %d updates, %s CPUs\n", writers, updates, total, cpus
	printf "%-44s %8.3f s  %7.3f ms/update  lost %d\n", "forge-state incr (fsync file + directory):", fns / 1e9, fns / 1e6 / total, total - ffinal
	printf "%-44s %8.3f s  %7.3f ms/update  lost %d\n", "baseline flock(1) + sh read/write (no fsync):", bns / 1e9, bns / 1e6 / total, total - bfinal
	printf "ratio baseline/forge-state: %.2fx\n", bns / fns
}'
[ "$forge_final" -eq "$total" ]
