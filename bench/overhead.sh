#!/bin/sh
# bench/overhead.sh — forge's own fixed cost per verification (issue 23), as
# ratios to what git itself needs, with their spread:
#
#   plain   forge-verify -q -- true in a one-commit repository: ms, and the
#           programs it starts (execve calls counted with strace -f, when
#           strace is installed; target <= 60 ms and <= 15)
#   warm    forge-verify -q --isolated --warm -- true over git status
#           --porcelain, 5,000 files with 50 edits and 20 untracked (<= 10x)
#   cold    forge-verify -q --isolated -- true over a bare
#           git worktree add --detach + git worktree remove --force, at
#           5,000 and 20,000 files (<= 1.15x); and over the same with git's
#           parallel checkout (checkout.workers=0), which forge's copies use
#
# Every round runs each variant once, next to its reference (the disk's
# noise hits both alike), for ROUNDS (7) rounds; a ratio is taken per round,
# and the median, min and max are printed. Everything lives in a temporary
# folder (pool and configuration included), removed at the end.
# Usage: bench/overhead.sh   (from the source tree after an in-tree build, or
#        from an out-of-tree build folder: ../bench/overhead.sh)
#        env: ROUNDS, FORGE_VERIFY, KEEP, BIG=0 skips the 20,000 files
set -eu
# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

ROUNDS=${ROUNDS:-7}
bench_forge_verify

bench_work 0
export XDG_CACHE_HOME="$work/cache" XDG_CONFIG_HOME="$work/config"
unset FORGE_CONFIG
bench_git_identity "$work"


time_ms() { bench_time_ms "$@"; }

bare_worktree() {
	git worktree add -q --detach "$work/wt" HEAD && git worktree remove --force "$work/wt"
}

# The same with git's parallel checkout, as forge's copies use it.
bare_worktree_parallel() {
	git -c checkout.workers=0 worktree add -q --detach "$work/wt" HEAD && git worktree remove --force "$work/wt"
}

# stats FILE: "median min max" of the numbers in FILE (one per line).
stats() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.2f %.2f %.2f", m, v[1], v[NR] }'
}

# ratio_to FILE X Y: appends X/Y to FILE.
ratio_to() { awk -v x="$2" -v y="$3" 'BEGIN { printf "%.3f\n", (y > 0) ? x / y : 0 }' >>"$1"; }

plain=$work/plain
mkdir -p "$plain"
git -C "$plain" init -q && echo hi >"$plain/README" && git -C "$plain" add README && git -C "$plain" commit -q -m one
bench_repo "$work/r5k" 5000
[ "${BIG:-1}" = 0 ] || bench_repo "$work/r20k" 20000

# Warm-ups: .forge/ made, the slot made and its index settled.
for _ in 1 2; do
	time_ms "$plain" "$FORGE_VERIFY" -q -- true >/dev/null
	time_ms "$work/r5k" "$FORGE_VERIFY" -q --isolated --warm -- true >/dev/null
done

execs=''
if command -v strace >/dev/null 2>&1; then
	(cd "$plain" && strace -f -qq -e trace=execve -o "$work/execs" "$FORGE_VERIFY" -q -- true) >/dev/null 2>&1
	execs=$(grep -c 'execve(' "$work/execs")
fi

# cold_round REPO N: one round of the cold copy of REPO (N thousand files)
# between the bare worktree and the one with a parallel checkout.
cold_round() {
	a=$(time_ms "$1" bare_worktree)
	c=$(time_ms "$1" "$FORGE_VERIFY" -q --isolated -- true)
	p=$(time_ms "$1" bare_worktree_parallel)
	echo "$a" >>"$work/a$2.ms"
	echo "$c" >>"$work/c$2.ms"
	echo "$p" >>"$work/p$2.ms"
	ratio_to "$work/cratio$2.ms" "$c" "$a"
	ratio_to "$work/pratio$2.ms" "$c" "$p"
}

for f in plain warm status wratio c5 a5 p5 cratio5 pratio5 c20 a20 p20 cratio20 pratio20; do : >"$work/$f.ms"; done
n=0
while [ "$n" -lt "$ROUNDS" ]; do
	# The last round's cold copies (gigabytes of small files at 20,000)
	# are written back first: a plain run's fsyncs otherwise wait behind
	# that writeback in the journal, a cost of this bench, not of forge.
	sync
	p=$(time_ms "$plain" "$FORGE_VERIFY" -q -- true)
	echo "$p" >>"$work/plain.ms"
	s=$(time_ms "$work/r5k" git status --porcelain)
	w=$(time_ms "$work/r5k" "$FORGE_VERIFY" -q --isolated --warm -- true)
	echo "$s" >>"$work/status.ms"
	echo "$w" >>"$work/warm.ms"
	ratio_to "$work/wratio.ms" "$w" "$s"
	cold_round "$work/r5k" 5
	[ "${BIG:-1}" = 0 ] || cold_round "$work/r20k" 20
	n=$((n + 1))
done

printf '%s rounds, interleaved; median (min-max)\n' "$ROUNDS"
line() {
	# shellcheck disable=SC2046 # three numbers
	set -- "$1" "$2" $(stats "$work/$3")
	printf '  %-58s %8s (%s-%s) %s\n' "$1" "$3" "$4" "$5" "$2"
}
line "forge-verify -q -- true, one commit (ms)" "target <= 60" plain.ms
[ -z "$execs" ] || printf '  %-58s %8s %s\n' "  programs it starts (execve, strace -f)" "$execs" "target <= 15"
line "git status --porcelain, 5,000 files (ms)" "" status.ms
line "forge-verify -q --isolated --warm -- true, 5,000 files (ms)" "" warm.ms
line "  warm / git status" "target <= 10" wratio.ms
line "git worktree add --detach + remove, 5,000 files (ms)" "" a5.ms
line "forge-verify -q --isolated -- true, 5,000 files (ms)" "" c5.ms
line "  cold / worktree add+remove, 5,000 files" "target <= 1.15" cratio5.ms
line "git -c checkout.workers=0 worktree add + remove, 5,000 files" "" p5.ms
line "  cold / that (the same parallel checkout)" "" pratio5.ms
if [ "${BIG:-1}" != 0 ]; then
	line "git worktree add --detach + remove, 20,000 files (ms)" "" a20.ms
	line "forge-verify -q --isolated -- true, 20,000 files (ms)" "" c20.ms
	line "  cold / worktree add+remove, 20,000 files" "target <= 1.15" cratio20.ms
	line "git -c checkout.workers=0 worktree add + remove, 20,000 files" "" p20.ms
	line "  cold / that (the same parallel checkout)" "" pratio20.ms
fi
