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
bench_forge_verify

# The slot's sandbox goes with the pool (--prune), before its folders.
if [ "${SANDBOX:-1}" = 0 ]; then bench_work 0; else bench_work 1; fi
export XDG_CACHE_HOME="$work/cache" XDG_STATE_HOME="$work/state"
if [ "${SANDBOX:-1}" != 0 ] && [ -z "${FORGE_CONFIG:-}" ]; then
	printf '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}}}\n' >"$work/sandbox.json"
	export FORGE_CONFIG="$work/sandbox.json"
fi
bench_git_identity "$work"

bench_repo "$repo" "$FILES" "$DIRS"

# time_ms COMMAND...: runs COMMAND once in the repository, prints wall ms.
time_ms() { bench_time_ms "$repo" "$@"; }

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
a=$(bench_median "$work/a") b=$(bench_median "$work/b") c=$(bench_median "$work/c") d=$(bench_median "$work/d")
g=''
[ "${SANDBOX:-1}" = 0 ] || g=$(bench_median "$work/g")

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
	e=$(bench_median "$work/e") f=$(bench_median "$work/f")
fi

printf '%-46s %8s\n' "median of $RUNS runs" "ms"
printf '%-46s %8d\n' "(a) git worktree add --detach + remove --force" "$a"
printf '%-46s %8d\n' "(b) forge-verify --isolated -- true" "$b"
printf '%-46s %8d\n' "(c) forge-verify --isolated --warm -- true" "$c"
printf '%-46s %8d\n' "(d) git status --porcelain" "$d"
printf 'b/a = %s (target <= 1.15)   c/b = %s (target <= 0.05)   c/d = %s\n' \
	"$(bench_ratio "$b" "$a")" "$(bench_ratio "$c" "$b")" "$(bench_ratio "$c" "$d")"
if [ -n "$g" ]; then
	printf '%-46s %8d\n' "(g) --isolated --warm --sandbox -- true" "$g"
	printf 'g/c = %s (the slot'"'"'s sandbox, kept between runs)\n' "$(bench_ratio "$g" "$c")"
fi
if [ -n "$e" ]; then
	printf '%-46s %8d\n' "(e) npm project, --isolated (npm ci each run)" "$e"
	printf '%-46s %8d\n' "(f) npm project, --isolated --warm (2nd+ run)" "$f"
	printf 'f/e = %s (the warm run skips npm ci)\n' "$(bench_ratio "$f" "$e")"
fi
