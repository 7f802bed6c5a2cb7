#!/bin/sh
# bench/isolated.sh — what an isolated verification costs, next to git's own
# operations, on a synthetic repository (default: 20,000 files of 4 KiB in
# 1,000 folders, ~80 MB, with 50 modified and 20 untracked files).
#
#   (a) git worktree add --detach + git worktree remove --force
#   (b) forge-verify --isolated -- true
#   (c) forge-verify --isolated --warm -- true   (after one warm-up run)
#   (d) git status --porcelain
#
# Prints the median of RUNS (5) rounds (each round runs every variant once)
# and the ratios b/a, c/b, c/d.
# Usage: bench/isolated.sh   (env: FILES, DIRS, RUNS, FORGE_VERIFY, KEEP)
set -eu

FILES=${FILES:-20000}
DIRS=${DIRS:-1000}
RUNS=${RUNS:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${FORGE_VERIFY:-}" ]; then
	if [ -x "$here/bin/forge-verify" ]; then
		FORGE_VERIFY=$here/bin/forge-verify
		: "${FORGE_LIBDIR:=$here/lib-sh}" "${FORGE_HELPERDIR:=$here/helpers}"
		export FORGE_LIBDIR FORGE_HELPERDIR
	else
		FORGE_VERIFY=$(command -v forge-verify) || { echo "bench: build forge first" >&2; exit 69; }
	fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/forge-bench.XXXXXX")
cleanup() { [ -n "${KEEP:-}" ] || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
repo=$work/repo
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$work/gitconfig"
git config --global user.name bench
git config --global user.email bench@example.invalid

echo "building a repository of $FILES files in $DIRS folders..." >&2
mkdir -p "$repo"
git -C "$repo" init -q
(cd "$repo" && awk -v files="$FILES" -v dirs="$DIRS" 'BEGIN {
	srand(42)
	line = ""
	for (i = 0; i < 64; i++) line = line sprintf("%c", 97 + int(rand() * 26))
	for (i = 0; i < files; i++) {
		d = sprintf("d%04d", i % dirs)
		if (!(d in made)) { system("mkdir -p " d); made[d] = 1 }
		f = sprintf("%s/f%05d.txt", d, i)
		for (j = 0; j < 56; j++) printf "%05d %s\n", j, line > f
		close(f)
	}
}')
git -C "$repo" add -A
git -C "$repo" commit -q -m synthetic
# 50 modified files spread over the tree.
git -C "$repo" ls-files | awk -v n="$FILES" 'NR % int(n / 50) == 1' | head -n 50 |
	while IFS= read -r f; do echo modified >>"$repo/$f"; done
i=0
while [ "$i" -lt 20 ]; do
	echo untracked >"$repo/d$(printf %04d "$i")/new-$i.txt"
	i=$((i + 1))
done
echo "size: $(du -sh --exclude=.git "$repo" | cut -f1), modified: $(git -C "$repo" diff --name-only | wc -l), untracked: $(git -C "$repo" ls-files --others --exclude-standard | wc -l)" >&2

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# time_ms COMMAND...: runs COMMAND once in the repository, prints wall ms.
time_ms() {
	t0=$(now_ms)
	(cd "$repo" && "$@") >/dev/null 2>&1 || { echo "bench: $* failed" >&2; exit 1; }
	echo $(($(now_ms) - t0))
}

# median FILE: the median of the numbers in FILE.
median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

bare_worktree() {
	git worktree add -q --detach "$work/wt" HEAD && git worktree remove --force "$work/wt"
}

"$FORGE_VERIFY" -q --isolated --warm -- true >/dev/null 2>&1 # warm-up: creates the slot
"$FORGE_VERIFY" -q --isolated --warm -- true >/dev/null 2>&1 # ...and settles its index
# Round robin: writing 80 MB per checkout builds up a write-back backlog that
# slows whatever runs later, so each round runs every variant once.
: >"$work/a" && : >"$work/b" && : >"$work/c" && : >"$work/d"
n=0
while [ "$n" -lt "$RUNS" ]; do
	time_ms bare_worktree >>"$work/a"
	time_ms "$FORGE_VERIFY" -q --isolated -- true >>"$work/b"
	time_ms "$FORGE_VERIFY" -q --isolated --warm -- true >>"$work/c"
	time_ms git status --porcelain >>"$work/d"
	n=$((n + 1))
done
a=$(median "$work/a") b=$(median "$work/b") c=$(median "$work/c") d=$(median "$work/d")

ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.3f", (y > 0) ? x / y : 0 }'; }
printf '%-46s %8s\n' "median of $RUNS runs" "ms"
printf '%-46s %8d\n' "(a) git worktree add --detach + remove --force" "$a"
printf '%-46s %8d\n' "(b) forge-verify --isolated -- true" "$b"
printf '%-46s %8d\n' "(c) forge-verify --isolated --warm -- true" "$c"
printf '%-46s %8d\n' "(d) git status --porcelain" "$d"
printf 'b/a = %s (target <= 1.15)   c/b = %s (target <= 0.05)   c/d = %s\n' \
	"$(ratio "$b" "$a")" "$(ratio "$c" "$b")" "$(ratio "$c" "$d")"
