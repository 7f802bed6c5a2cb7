#!/bin/sh
# bench/reuse.sh — what a reused verification (forge-verify --reuse, SPEC
# 3.7) costs, on bench/isolated.sh's synthetic repository (default: 20,000
# files of 4 KiB in 1,000 folders, 50 modified and 20 untracked files):
#
#   (a) git status --porcelain
#   (b) forge-verify --key --isolated -- sleep 1        (the key of that state)
#   (c) forge-verify --isolated --warm --reuse -- sleep 1  (reused: nothing runs)
#   (d) forge-verify --isolated --warm --no-reuse -- sleep 1  (the run it replaces)
#   (e) git status and forge-index-tree on forge's kept index of the key
#       (.forge/reuse/index-*, with the untracked cache), as the key runs
#       them: the key's work outside the shell, the floor of (b) and (c)
#   (f) cp of the user's index, git add -A and git write-tree on that copy:
#       what the key cost before it had an index of its own
#   (g) git write-tree on the kept index, and (h) forge-index-tree on it:
#       the tree of an unchanged index, as git computes it and as the
#       helper reads it from the file
#
# Prints the median of RUNS (5) rounds (each round runs every variant once),
# the ratios b/a (target <= 1.5), c/a (target <= 2), c/d (target <= 0.05) and h/g,
# and, when strace is installed, the programs a reused run starts.
# Usage: bench/reuse.sh   (env: FILES, DIRS, RUNS, FORGE_VERIFY, KEEP)
set -eu
# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

FILES=${FILES:-20000}
DIRS=${DIRS:-1000}
RUNS=${RUNS:-5}
bench_forge_verify

bench_work 1
export XDG_CACHE_HOME="$work/cache" XDG_STATE_HOME="$work/state"
bench_git_identity "$work"

bench_repo "$repo" "$FILES" "$DIRS"
# forge-index-tree: the build tree's helpers, else pkglibexecdir beside bindir.
index_tree=${FORGE_HELPERDIR:-$(dirname "$FORGE_VERIFY")/../libexec/forge}/forge-index-tree
[ -x "$index_tree" ] || { echo "bench: no forge-index-tree at $index_tree" >&2; exit 69; }
export index_tree

# time_ms COMMAND...: runs COMMAND once in the repository, prints wall ms.
time_ms() { bench_time_ms "$repo" "$@"; }

# The warm slot, then the run whose verdict the others reuse.
time_ms "$FORGE_VERIFY" -q --isolated --warm --no-reuse -- sleep 1 >/dev/null
time_ms "$FORGE_VERIFY" -q --isolated --warm --reuse -- sleep 1 >/dev/null
reused=$(cd "$repo" && "$FORGE_VERIFY" --isolated --warm --reuse -- sleep 1)
case $reused in
*'(reused run '*) ;;
*) echo "bench: the verdict was not reused: $reused" >&2; exit 1 ;;
esac
for v in a b c d e f g h; do : >"$work/$v"; done
n=0
while [ "$n" -lt "$RUNS" ]; do
	time_ms git status --porcelain >>"$work/a"
	time_ms "$FORGE_VERIFY" --key --isolated -- sleep 1 >>"$work/b"
	time_ms "$FORGE_VERIFY" -q --isolated --warm --reuse -- sleep 1 >>"$work/c"
	time_ms "$FORGE_VERIFY" -q --isolated --warm --no-reuse -- sleep 1 >>"$work/d"
	# shellcheck disable=SC2016 # expanded by that sh
	time_ms sh -c 'set -- .forge/reuse/index-*; export GIT_INDEX_FILE="$PWD/$1"
		c="-c core.untrackedCache=true -c core.fsmonitor=false -c core.trustctime=true -c core.checkStat=default"
		git $c status --porcelain -unormal --ignore-submodules=dirty --no-renames && "$index_tree" -- "$1"' >>"$work/e"
	# shellcheck disable=SC2016 # expanded by that sh
	time_ms sh -c 'set -- .forge/reuse/index-*; GIT_INDEX_FILE="$PWD/$1" git write-tree' >>"$work/g"
	# shellcheck disable=SC2016 # expanded by that sh
	time_ms sh -c 'set -- .forge/reuse/index-*; "$index_tree" -- "$1"' >>"$work/h"
	# shellcheck disable=SC2016 # expanded by that sh
	time_ms sh -c 'cp .git/index "$1" && GIT_INDEX_FILE=$1 git add -A && GIT_INDEX_FILE=$1 git write-tree && rm -f "$1"' \
		sh "$work/index" >>"$work/f"
	n=$((n + 1))
done
a=$(bench_median "$work/a") b=$(bench_median "$work/b") c=$(bench_median "$work/c") d=$(bench_median "$work/d")
e=$(bench_median "$work/e") f=$(bench_median "$work/f") g=$(bench_median "$work/g") h=$(bench_median "$work/h")

printf '%-52s %8s\n' "median of $RUNS runs" "ms"
printf '%-52s %8d\n' "(a) git status --porcelain" "$a"
printf '%-52s %8d\n' "(b) forge-verify --key --isolated -- sleep 1" "$b"
printf '%-52s %8d\n' "(c) --isolated --warm --reuse -- sleep 1 (reused)" "$c"
printf '%-52s %8d\n' "(d) --isolated --warm --no-reuse -- sleep 1" "$d"
printf '%-52s %8d\n' "(e) git status + forge-index-tree on the kept index" "$e"
printf '%-52s %8d\n' "(f) git add -A + write-tree on a copy of the index" "$f"
printf '%-52s %8d\n' "(g) git write-tree on the kept index" "$g"
printf '%-52s %8d\n' "(h) forge-index-tree on the kept index" "$h"
printf 'b/a = %s (target <= 1.5)   c/a = %s (target <= 2)   c/d = %s (target <= 0.05)   e/a = %s   f/a = %s   h/g = %s\n' \
	"$(bench_ratio "$b" "$a")" "$(bench_ratio "$c" "$a")" "$(bench_ratio "$c" "$d")" \
	"$(bench_ratio "$e" "$a")" "$(bench_ratio "$f" "$a")" "$(bench_ratio "$h" "$g")"
printf 'uptime: %s\n' "$(uptime)"
if command -v strace >/dev/null 2>&1; then
	(cd "$repo" && strace -f -qq -e trace=execve -o "$work/execs" \
		"$FORGE_VERIFY" -q --isolated --warm --reuse -- sleep 1) >/dev/null 2>&1 || :
	progs=$(grep 'execve(' "$work/execs" | grep -v ' = -1 ' | sed -n 's/.*execve("\([^"]*\)".*/\1/p' | sed 's|.*/||')
	printf 'a reused run starts %s programs: %s git, %s jq (%s)\n' "$(printf '%s\n' "$progs" | wc -l)" \
		"$(printf '%s\n' "$progs" | grep -cx git)" "$(printf '%s\n' "$progs" | grep -cx jq)" \
		"$(printf '%s\n' "$progs" | sort | uniq -c | awk '{ printf "%s%s %s", sep, $2, $1; sep = ", " }')"
fi
