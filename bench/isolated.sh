#!/bin/sh
# bench/isolated.sh — what an isolated verification costs, next to git's own
# operations, on a synthetic repository (default: 20,000 files of 4 KiB in
# 1,000 folders, ~80 MB, with 50 modified and 20 untracked files).
#
#   (a) git worktree add --detach + git worktree remove --force
#   (b) forge-verify --isolated -- true
#   (c) forge-verify --isolated --warm -- true   (after one warm-up run)
#   (d) git status --porcelain
#   (g) forge-verify --isolated --warm --sandbox -- true   (the slot's sandbox
#       kept between runs; SANDBOX=0 skips it)
#
# and, on a small npm project with one dev dependency and a lockfile (its
# setup, npm ci, needs the npm registry; NPM=0 skips it):
#
#   (e) forge-verify --isolated -- npm test          (cold: npm ci every run)
#   (f) forge-verify --isolated --warm -- npm test   (warm, lockfile unchanged)
#
# Prints the median of RUNS (5) rounds (each round runs every variant once)
# and the ratios b/a, c/b, c/d, g/c, f/e. The pool goes to a temporary
# XDG_CACHE_HOME, the sandboxes' state to a temporary XDG_STATE_HOME, both
# removed at the end. The sandbox uses $FORGE_CONFIG when set, else the
# namespace backend with the host's root filesystem (no Docker needed).
# Usage: bench/isolated.sh   (env: FILES, DIRS, RUNS, FORGE_VERIFY, KEEP, NPM, SANDBOX)
set -eu
# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

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
# The slot's sandbox goes with the pool (--prune), before its folders.
cleanup() {
	[ "${SANDBOX:-1}" = 0 ] || (cd "$work/repo" 2>/dev/null && "$FORGE_VERIFY" --prune) >/dev/null 2>&1 || :
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
repo=$work/repo
export XDG_CACHE_HOME="$work/cache" XDG_STATE_HOME="$work/state"
if [ "${SANDBOX:-1}" != 0 ] && [ -z "${FORGE_CONFIG:-}" ]; then
	printf '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}}}\n' >"$work/sandbox.json"
	export FORGE_CONFIG="$work/sandbox.json"
fi
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$work/gitconfig"
git config --global user.name bench
git config --global user.email bench@example.invalid

bench_repo "$repo" "$FILES" "$DIRS"

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

time_ms "$FORGE_VERIFY" -q --isolated --warm -- true >/dev/null # warm-up: creates the slot
time_ms "$FORGE_VERIFY" -q --isolated --warm -- true >/dev/null # ...and settles its index
[ "${SANDBOX:-1}" = 0 ] || time_ms "$FORGE_VERIFY" -q --isolated --warm --sandbox -- true >/dev/null # starts the slot's sandbox
# Round robin: writing 80 MB per checkout builds up a write-back backlog that
# slows whatever runs later, so each round runs every variant once.
: >"$work/a" && : >"$work/b" && : >"$work/c" && : >"$work/d" && : >"$work/g"
n=0
while [ "$n" -lt "$RUNS" ]; do
	time_ms bare_worktree >>"$work/a"
	time_ms "$FORGE_VERIFY" -q --isolated -- true >>"$work/b"
	time_ms "$FORGE_VERIFY" -q --isolated --warm -- true >>"$work/c"
	time_ms git status --porcelain >>"$work/d"
	[ "${SANDBOX:-1}" = 0 ] || time_ms "$FORGE_VERIFY" -q --isolated --warm --sandbox -- true >>"$work/g"
	n=$((n + 1))
done
a=$(median "$work/a") b=$(median "$work/b") c=$(median "$work/c") d=$(median "$work/d")
g=''
[ "${SANDBOX:-1}" = 0 ] || g=$(median "$work/g")

e='' f=''
if [ "${NPM:-1}" != 0 ] && command -v npm >/dev/null 2>&1; then
	echo "an npm project (npm ci needs the registry)..." >&2
	npm=$work/npm
	mkdir -p "$npm"
	cat >"$npm/package.json" <<-'JSON'
	{"name": "forge-bench", "version": "1.0.0", "private": true,
	 "scripts": {"test": "node -e \"require('is-number')\""},
	 "devDependencies": {"is-number": "7.0.0"}}
	JSON
	cat >"$npm/package-lock.json" <<-'JSON'
	{"name": "forge-bench", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
	 "packages": {
	  "": {"name": "forge-bench", "version": "1.0.0", "devDependencies": {"is-number": "7.0.0"}},
	  "node_modules/is-number": {"version": "7.0.0",
	   "resolved": "https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz",
	   "integrity": "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==",
	   "dev": true, "engines": {"node": ">=0.12.0"}}}}
	JSON
	printf 'node_modules/\n' >"$npm/.gitignore"
	git -C "$npm" init -q && git -C "$npm" add -A && git -C "$npm" commit -q -m npm
	repo=$npm
	time_ms "$FORGE_VERIFY" -q --isolated --warm -- npm test >/dev/null # the slot's one npm ci
	: >"$work/e" && : >"$work/f"
	n=0
	while [ "$n" -lt "$RUNS" ]; do
		time_ms "$FORGE_VERIFY" -q --isolated -- npm test >>"$work/e"
		time_ms "$FORGE_VERIFY" -q --isolated --warm -- npm test >>"$work/f"
		n=$((n + 1))
	done
	e=$(median "$work/e") f=$(median "$work/f")
fi

ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.3f", (y > 0) ? x / y : 0 }'; }
printf '%-46s %8s\n' "median of $RUNS runs" "ms"
printf '%-46s %8d\n' "(a) git worktree add --detach + remove --force" "$a"
printf '%-46s %8d\n' "(b) forge-verify --isolated -- true" "$b"
printf '%-46s %8d\n' "(c) forge-verify --isolated --warm -- true" "$c"
printf '%-46s %8d\n' "(d) git status --porcelain" "$d"
printf 'b/a = %s (target <= 1.15)   c/b = %s (target <= 0.05)   c/d = %s\n' \
	"$(ratio "$b" "$a")" "$(ratio "$c" "$b")" "$(ratio "$c" "$d")"
if [ -n "$g" ]; then
	printf '%-46s %8d\n' "(g) --isolated --warm --sandbox -- true" "$g"
	printf 'g/c = %s (the slot'"'"'s sandbox, kept between runs)\n' "$(ratio "$g" "$c")"
fi
if [ -n "$e" ]; then
	printf '%-46s %8d\n' "(e) npm project, --isolated (npm ci each run)" "$e"
	printf '%-46s %8d\n' "(f) npm project, --isolated --warm (2nd+ run)" "$f"
	printf 'f/e = %s (the warm run skips npm ci)\n' "$(ratio "$f" "$e")"
fi
