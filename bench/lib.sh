# bench/lib.sh — what the benchmarks share; sourced, not run.
# shellcheck shell=sh

# bench_repo DIR FILES [DIRS]: a repository of FILES files of 4 KiB in DIRS
# (FILES/20) folders, committed, then 50 of them modified and 20 untracked
# files added: the working state an agent loop verifies. The index is
# settled, as in a repository in use (git status refreshes it).
bench_repo() {
	echo "building $1: $2 files in ${3:-$(($2 / 20))} folders..." >&2
	mkdir -p "$1"
	git -C "$1" init -q
	(cd "$1" && awk -v files="$2" -v dirs="${3:-$(($2 / 20))}" 'BEGIN {
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
	git -C "$1" add -A
	git -C "$1" commit -q -m synthetic
	# 50 modified files spread over the tree.
	git -C "$1" ls-files | awk -v n="$2" 'NR % int(n / 50) == 1' | head -n 50 |
		while IFS= read -r f; do echo modified >>"$1/$f"; done
	i=0
	while [ "$i" -lt 20 ]; do
		echo untracked >"$1/d$(printf %04d "$i")/new-$i.txt"
		i=$((i + 1))
	done
	git -C "$1" status --porcelain >/dev/null
	echo "modified: $(git -C "$1" diff --name-only | wc -l), untracked: $(git -C "$1" ls-files --others --exclude-standard | wc -l)" >&2
}

# now_ms: prints the wall clock in milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# bench_forge_verify: sets FORGE_VERIFY, unless set, to the forge-verify of
# the build: the source tree's after an in-tree build, else the build folder
# this runs in (out of tree: ../bench/NAME.sh), with its library and helpers;
# else the one on PATH.
bench_forge_verify() {
	[ -z "${FORGE_VERIFY:-}" ] || return 0
	bfv_here=$(cd "$(dirname "$0")/.." && pwd)
	[ -x "$bfv_here/bin/forge-verify" ] || [ ! -x bin/forge-verify ] || bfv_here=$(pwd)
	if [ -x "$bfv_here/bin/forge-verify" ]; then
		FORGE_VERIFY=$bfv_here/bin/forge-verify
		: "${FORGE_LIBDIR:=$bfv_here/lib-sh}" "${FORGE_HELPERDIR:=$bfv_here/helpers}"
		export FORGE_LIBDIR FORGE_HELPERDIR
	else
		FORGE_VERIFY=$(command -v forge-verify) || { echo "bench: build forge first" >&2; exit 69; }
	fi
}

# bench_work PRUNE: $work, a temporary folder, and $repo, $work/repo. At
# exit (INT, TERM and HUP exit), when PRUNE is 1, forge-verify --prune in
# $work/repo (the pool's sandboxes go with it), then $work is removed
# unless KEEP is set.
bench_work() {
	work=$(mktemp -d "${TMPDIR:-/tmp}/forge-bench.XXXXXX")
	# shellcheck disable=SC2034 # the caller's
	repo=$work/repo
	bench_work_prune=$1
	trap bench_work_cleanup EXIT
	trap 'exit 130' INT TERM HUP
}

# shellcheck disable=SC2317 # called by the trap
bench_work_cleanup() {
	[ "$bench_work_prune" != 1 ] || (cd "$work/repo" 2>/dev/null && "$FORGE_VERIFY" --prune) >/dev/null 2>&1 || :
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}

# bench_git_identity DIR: git reads no system configuration and a global
# one in DIR/gitconfig, which names the committer "bench".
bench_git_identity() {
	export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$1/gitconfig"
	git config --global user.name bench
	git config --global user.email bench@example.invalid
}

# bench_time_ms DIR COMMAND...: runs COMMAND once in DIR, prints wall ms.
bench_time_ms() {
	btm_dir=$1
	shift
	btm_t0=$(now_ms)
	(cd "$btm_dir" && "$@") >/dev/null 2>&1 || { echo "bench: $* failed in $btm_dir" >&2; exit 1; }
	echo $(($(now_ms) - btm_t0))
}

# bench_median FILE: the median of the whole numbers in FILE (one per line),
# a whole number: with an even count, the mean of the middle two, truncated.
bench_median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# bench_ratio X Y: X/Y to three decimals (0 when Y is 0).
bench_ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.3f", (y > 0) ? x / y : 0 }'; }

# The sandbox benchmarks (check, harness, sandbox-exec) run the programs of
# a build tree against a scratch repository with a private HOME.

# bench_use_build HELPER PROGRAM...: the programs of the build tree
# $FORGE_BUILD (default: the tree this script is in; the result, $build)
# when it has HELPER built, else those on PATH; exits 69 unless every
# PROGRAM is found.
bench_use_build() {
	build=${FORGE_BUILD:-$(cd "$(dirname -- "$0")/.." && pwd)}
	if [ -f "$build/lib-sh/forge.sh" ] && [ -x "$build/helpers/$1" ]; then
		export FORGE_LIBDIR="$build/lib-sh" FORGE_HELPERDIR="$build/helpers"
		PATH=$build/bin:$build/helpers:$PATH
	fi
	shift
	for bub_prog in "$@"; do
		command -v "$bub_prog" >/dev/null 2>&1 ||
			{ echo "$0: $bub_prog not found (set FORGE_BUILD to the build tree)" >&2; exit 69; }
	done
}

# bench_scratch CONFIG: $tmp, a temporary folder with a private HOME (and
# the XDG folders in it) whose forge configuration is CONFIG, and $tmp/repo,
# a repository with one empty commit, the current folder from here on. At
# exit (INT, TERM and HUP exit) bench_cleanup removes the sandbox of
# $tmp/repo, then $tmp.
bench_scratch() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/forge-bench.XXXXXX")
	export HOME="$tmp/home" XDG_STATE_HOME="$tmp/home/.local/state" XDG_CONFIG_HOME="$tmp/home/.config"
	export XDG_CACHE_HOME="$tmp/home/.cache" GIT_CONFIG_NOSYSTEM=1
	unset FORGE_CONFIG FORGE_SANDBOX_CONTAINER
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	mkdir -p "$XDG_CONFIG_HOME/forge" "$tmp/repo"
	printf '%s\n' "$1" >"$XDG_CONFIG_HOME/forge/config.json"
	git -C "$tmp/repo" init -q
	git -C "$tmp/repo" -c user.name=bench -c user.email=bench@example.invalid commit -q --allow-empty -m bench
	cd "$tmp/repo" || exit 69
}

# shellcheck disable=SC2317 # called by the trap
bench_cleanup() {
	[ ! -d "$tmp/repo" ] || forge-sandbox rm "$tmp/repo" >/dev/null 2>&1 || :
	rm -rf "$tmp"
}
