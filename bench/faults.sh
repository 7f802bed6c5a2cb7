#!/bin/sh
# bench/faults.sh — a fault campaign anyone can run against forge-verify:
#
#   kills     KILLS runs (default 60) of plain, --isolated and --isolated --warm
#             verifications killed at a random moment (0-300 ms) with SIGINT,
#             SIGTERM and SIGKILL in turn, on a repository with uncommitted
#             and untracked changes; then one more run.
#   parallel  CONCURRENT (30) concurrent `forge-verify -- true`, then as many
#             concurrent failing runs.
#   hostile   a clone of a repository that commits .forge/runs -> ../.. (and
#             the other state paths of .forge as symlinks), and FIFOs where
#             state files belong, verified in every mode.
#
# Prints one line of counts per part and exits 1 when any property broke:
# the working tree, index, HEAD, refs or stash changed; a copy, registration
# or temporary file left behind; a torn timeline line; a streak that is not
# exactly the number of failures; a PASS that was not 30 of 30; anything
# written, created or deleted outside the hostile clone; a hang.
# Usage: bench/faults.sh [kills|parallel|hostile]...   (default: all three)
#        env: KILLS, CONCURRENT, FORGE_BUILDDIR (a build tree; default: this
#        tree when built in place, else forge-verify on PATH), KEEP=1
set -eu

KILLS=${KILLS:-60}
CONCURRENT=${CONCURRENT:-30}
here=$(cd "$(dirname "$0")/.." && pwd)
build=${FORGE_BUILDDIR:-}
[ -n "$build" ] || [ ! -x "$here/bin/forge-verify" ] || build=$here
if [ -n "$build" ]; then
	PATH=$build/bin:$build/helpers:$PATH
	FORGE_LIBDIR=${FORGE_LIBDIR:-$build/lib-sh} FORGE_HELPERDIR=${FORGE_HELPERDIR:-$build/helpers}
	export PATH FORGE_LIBDIR FORGE_HELPERDIR
fi
command -v forge-verify >/dev/null || { echo "bench/faults.sh: build forge first" >&2; exit 69; }

work=$(mktemp -d "${TMPDIR:-/tmp}/forge-faults.XXXXXX")
cleanup() { [ -n "${KEEP:-}" ] || { chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"; }; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export TMPDIR="$work/tmp" HOME="$work/home"
mkdir -p "$TMPDIR" "$HOME"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$HOME/.gitconfig" XDG_CONFIG_HOME="$HOME/.config"
git config --global user.name faults
git config --global user.email faults@example.invalid
unset FORGE_CONFIG FORGE_CHANGE GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE

broken=0
# bad WHAT: reports a broken property; the campaign will exit 1.
bad() {
	printf 'BROKEN: %s\n' "$*" >&2
	broken=$((broken + 1))
}

# new_repo DIR: a repository with a commit, an uncommitted edit and an
# untracked file.
new_repo() {
	mkdir -p "$1"
	git -C "$1" init -q
	printf 'a\nb\n' >"$1/tracked.txt"
	git -C "$1" add tracked.txt
	git -C "$1" commit -q -m initial
	echo uncommitted >>"$1/tracked.txt"
	echo untracked >"$1/new.txt"
}

# repo_state DIR: a digest of what no verification may change.
repo_state() {
	(
		cd "$1"
		find . \( -name .git -o -name .forge \) -prune -o -type f -print | LC_ALL=C sort | xargs cat
		cat .git/index
		git rev-parse HEAD
		git for-each-ref
		git stash list
	) | cksum
}

# timeline_intact DIR: every timeline line parses as JSON.
timeline_intact() {
	[ ! -f "$1/.forge/timeline.jsonl" ] ||
		jq -R 'fromjson' "$1/.forge/timeline.jsonl" >/dev/null 2>&1
}

# pick N: a pseudo-random number in [0, N) (awk's; no $RANDOM in sh).
pick() { awk -v n="$1" -v s="$$$(date +%N)" 'BEGIN { srand(s); print int(rand() * n) }'; }

part_kills() {
	repo=$work/kills
	new_repo "$repo"
	cd "$repo"
	before=$(repo_state "$repo")
	i=0 int=0 term=0 kill=0 signalled=0
	while [ "$i" -lt "$KILLS" ]; do
		case $((i % 3)) in
		0) sig=INT int=$((int + 1)) ;;
		1) sig=TERM term=$((term + 1)) ;;
		*) sig=KILL kill=$((kill + 1)) ;;
		esac
		case $((i % 3 + i / 3 % 3)) in
		0 | 3) mode= ;;
		1 | 4) mode=--isolated ;;
		*) mode='--isolated --warm' ;;
		esac
		# In a copy the step destroys what it can; in the real tree it only
		# waits.
		step='sleep 0.2'
		[ -z "$mode" ] || step='rm -rf ./*; sleep 0.2'
		# shellcheck disable=SC2086 # mode is zero, one or two plain words
		forge-verify -q $mode -- sh -c "$step" >/dev/null 2>&1 &
		pid=$!
		sleep "0.$(printf '%03d' "$(pick 300)")"
		kill -s "$sig" "$pid" 2>/dev/null || :
		status=0
		wait "$pid" 2>/dev/null || status=$?
		[ "$status" -le 128 ] || signalled=$((signalled + 1))
		i=$((i + 1))
	done
	forge-verify -q --isolated -- true >/dev/null 2>&1 || bad "kills: the run after the kills failed"
	forge-verify -q --isolated --warm -- true >/dev/null 2>&1 || bad "kills: the warm run after the kills failed"
	[ "$(repo_state "$repo")" = "$before" ] || bad "kills: the repository changed"
	left_copies=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 -name 'forge-verify.*' | wc -l)
	[ "$left_copies" -eq 0 ] || bad "kills: $left_copies copies left in TMPDIR"
	registered=$(git worktree list --porcelain | grep -c '^worktree ')
	[ "$registered" -le 2 ] || bad "kills: $registered worktrees registered (main + warm slot expected)"
	timeline_intact "$repo" || bad "kills: a timeline line does not parse"
	temps=$(find .forge -name '.*.??????' | wc -l)
	[ "$temps" -eq 0 ] || bad "kills: $temps forge-state temporary files left"
	streak=$(forge-state get .forge/breaker streak 0)
	[ "$streak" = 0 ] || bad "kills: streak $streak after runs that never failed"
	printf 'kills: %s runs (INT %s, TERM %s, KILL %s), %s ended by the signal; repository unchanged: %s; copies left: %s; worktrees registered: %s; temporary files left: %s; timeline lines: %s\n' \
		"$KILLS" "$int" "$term" "$kill" "$signalled" \
		"$([ "$(repo_state "$repo")" = "$before" ] && echo yes || echo NO)" \
		"$left_copies" "$registered" "$temps" "$(wc -l <.forge/timeline.jsonl)"
	cd "$work"
}

part_parallel() {
	repo=$work/parallel
	new_repo "$repo"
	cd "$repo"
	echo '{"verify": {"breaker": {"threshold": 100000}}}' >forge.json
	i=0
	while [ "$i" -lt "$CONCURRENT" ]; do
		forge-verify -q -- true >"$work/pass.$i" 2>&1 &
		i=$((i + 1))
	done
	wait
	pass=$(cat "$work"/pass.* | grep -c '^Verdict: PASS$' || :)
	[ "$pass" -eq "$CONCURRENT" ] || bad "parallel: $pass of $CONCURRENT concurrent passing runs passed"
	i=0
	while [ "$i" -lt "$CONCURRENT" ]; do
		forge-verify -q -- false >/dev/null 2>&1 &
		i=$((i + 1))
	done
	wait
	streak=$(forge-state get .forge/breaker streak 0)
	[ "$streak" -eq "$CONCURRENT" ] || bad "parallel: streak $streak after $CONCURRENT concurrent failures"
	lines=$(wc -l <.forge/timeline.jsonl)
	[ "$lines" -eq $((2 * CONCURRENT)) ] || bad "parallel: $lines timeline lines for $((2 * CONCURRENT)) runs"
	timeline_intact "$repo" || bad "parallel: a timeline line does not parse"
	kept=$(find .forge/runs -mindepth 1 -maxdepth 1 -type d | wc -l)
	printf 'parallel: %s concurrent passing runs: %s PASS; %s concurrent failing runs: streak %s; timeline lines %s (all parse: %s); run folders kept %s\n' \
		"$CONCURRENT" "$pass" "$CONCURRENT" "$streak" "$lines" \
		"$(timeline_intact "$repo" && echo yes || echo NO)" "$kept"
	cd "$work"
}

# outside_state: a digest of the folder a hostile clone sits in, the clone
# left out, and of the folder a link may point at.
outside_state() {
	(cd "$work/hostile" && find . -path ./victim -prune -o -print | LC_ALL=C sort &&
		find . -path ./victim -prune -o -type f -print | LC_ALL=C sort | xargs cat) | cksum
}

part_hostile() {
	mkdir -p "$work/hostile/precious-dir"
	echo precious >"$work/hostile/precious"
	echo precious >"$work/hostile/precious-dir/file"
	tries=0 refused=0 other=0 hangs=0 touched=0
	for layout in .forge/runs .forge .forge/changes .forge/timeline.jsonl .forge/breaker \
		.forge/changes/c.json fifo:.forge/breaker fifo:.forge/timeline.jsonl; do
		origin=$work/origin
		rm -rf "$origin" "$work/hostile/victim"
		new_repo "$origin"
		path=${layout#fifo:}
		mkdir -p "$origin/$(dirname "$path")"
		if [ "$layout" = "$path" ]; then
			ln -s ../.. "$origin/$path"
			git -C "$origin" add -f -- "$path"
			git -C "$origin" commit -q -m hostile
		fi
		git clone -q "$origin" "$work/hostile/victim"
		if [ "$layout" != "$path" ]; then
			mkdir -p "$work/hostile/victim/$(dirname "$path")"
			mkfifo "$work/hostile/victim/$path"
		fi
		before=$(outside_state)
		for args in '-- true' '--isolated -- true' '--change c -- false' '--reset' '--breaker' '--report --change c'; do
			tries=$((tries + 1))
			status=0
			# shellcheck disable=SC2086 # args are plain words
			(cd "$work/hostile/victim" && exec timeout 60 forge-verify -q $args) >/dev/null 2>&1 || status=$?
			case $status in
			73) refused=$((refused + 1)) ;;
			124) hangs=$((hangs + 1)); bad "hostile: $layout, forge-verify $args hung" ;;
			*) other=$((other + 1)) ;;
			esac
			if [ "$(outside_state)" != "$before" ]; then
				touched=$((touched + 1))
				bad "hostile: $layout, forge-verify $args changed the folder outside the clone"
			fi
		done
	done
	printf 'hostile: 8 layouts x 6 modes = %s runs: %s refused with 73, %s other exits (modes that do not use the path), %s hangs, %s changed anything outside the clone\n' \
		"$tries" "$refused" "$other" "$hangs" "$touched"
}

[ "$#" -gt 0 ] || set -- kills parallel hostile
for part in "$@"; do
	case $part in
	kills) part_kills ;;
	parallel) part_parallel ;;
	hostile) part_hostile ;;
	*) echo "bench/faults.sh: unknown part '$part' (kills, parallel, hostile)" >&2; exit 64 ;;
	esac
done
if [ "$broken" -gt 0 ]; then
	echo "faults: $broken properties broken" >&2
	exit 1
fi
echo 'faults: every property held'
