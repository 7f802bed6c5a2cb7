# Shared setup for every bats file: a private HOME, config and TMPDIR per
# test, the build tree's programs first on PATH, and scratch-repo builders.
# Run through `make check`, or directly: `bats t/` from an in-tree build
# (set abs_top_builddir for an out-of-tree one).

load_support() {
	load '/usr/lib/bats/bats-support/load'
	load '/usr/lib/bats/bats-assert/load'
	bats_require_minimum_version 1.5.0
}

forge_test_setup() {
	: "${abs_top_srcdir:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
	: "${abs_top_builddir:=$abs_top_srcdir}"
	export abs_top_srcdir abs_top_builddir
	SCRATCH=$(mktemp -d "${BATS_TMPDIR:-/tmp}/forge-test.XXXXXX")
	export HOME="$SCRATCH/home" TMPDIR="$SCRATCH/tmp"
	export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share"
	mkdir -p "$HOME" "$TMPDIR"
	export FORGE_LIBDIR="$abs_top_builddir/lib-sh"
	export FORGE_HELPERDIR="$abs_top_builddir/helpers"
	export PATH="$abs_top_builddir/bin:$abs_top_builddir/helpers:$PATH"
	# FORGE_TEST_SHELL (e.g. "bash", "busybox sh"): run the shell programs
	# under that shell instead of their #!/bin/sh, through wrappers first on
	# PATH. CI runs the suites once per shell this way.
	if [ -n "${FORGE_TEST_SHELL:-}" ]; then
		mkdir -p "$SCRATCH/shellbin"
		for prog in "$abs_top_builddir"/bin/forge-*; do
			case $prog in *.in) continue ;; esac
			printf '#!/bin/sh\nexec %s %q "$@"\n' "$FORGE_TEST_SHELL" "$prog" >"$SCRATCH/shellbin/${prog##*/}"
			chmod +x "$SCRATCH/shellbin/${prog##*/}"
		done
		export PATH="$SCRATCH/shellbin:$PATH"
	fi
	unset FORGE_CONFIG FORGE_CHANGE FORGE_VERIFY NO_COLOR
	# git: a known identity, no system/global config leaking in.
	export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$HOME/.gitconfig"
	git config --global user.name 'Forge Test'
	git config --global user.email 'forge@example.invalid'
	git config --global init.defaultBranch main
	git config --global protocol.file.allow always
}

# repo_setup: the setup of a file whose tests run in a scratch repository.
repo_setup() {
	load_support
	forge_test_setup
	forge_test_repo
}

forge_test_teardown() {
	[ -n "${SCRATCH:-}" ] || return 0
	chmod -R u+w "$SCRATCH" 2>/dev/null || true
	rm -rf "$SCRATCH"
}

# need PROGRAM: skip the test when PROGRAM is not installed; in CI
# (CI=true), where build-aux/install-deps installs everything, fail it.
need() {
	command -v "$1" >/dev/null && return 0
	[ "${CI:-}" != true ] || fail "$1 is required in CI (build-aux/install-deps installs it)"
	skip "$1 not installed"
}

# need_strace: need strace, and LeakSanitizer off for the test: it cannot
# run under ptrace (in CI's sanitizer pass a traced helper would fail at
# exit; leaks are checked by every other test there).
need_strace() {
	need strace
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
}

# wait_each PID...: waits for each of the processes; fails when one of them
# ended with a status other than 0. Never a bare `wait`, `wait %N` or `jobs -p` in a
# test: bats's per-test timeout (BATS_TEST_TIMEOUT, t/run-bats) is a
# background job of the test's shell too, so either waits for it.
wait_each() {
	local pid rc=0
	for pid in "$@"; do
		wait "$pid" || rc=1
	done
	return "$rc"
}

# now_ms: milliseconds since the epoch.
now_ms() { date +%s%3N; }

# assert_help_and_version PROG USAGE: `PROG --help` exits 0 with USAGE at
# the start of its first line on stdout; `PROG --version` exits 0 printing
# "PROG X.Y...". (Needs bats_require_minimum_version 1.5.0: --separate-stderr.)
assert_help_and_version() {
	run --separate-stderr "$1" --help
	assert_success
	assert_line --index 0 --partial "$2"
	run --separate-stderr "$1" --version
	assert_success
	assert_output --regexp "^$1 [0-9]+\.[0-9]+"
}

# last_record: the last verify record of the timeline of the repository at
# the current folder.
last_record() { grep -F '"event":"verify"' .forge/timeline.jsonl | tail -n 1; }

# step_runs: the run strings of the last record's steps, one per line.
step_runs() { last_record | jq -r '.steps[].run'; }

# streak: the failure streak the breaker file holds (nothing, and status 1,
# when it holds none).
streak() { forge-state get .forge/breaker streak; }

# forge_test_repo: a scratch repository with one commit as $REPO; cd there.
forge_test_repo() {
	REPO=$SCRATCH/repo
	make_repo "$REPO" && cd "$REPO" || return
}

# make_repo DIR: a git repository with one commit (a README).
make_repo() {
	mkdir -p "$1" &&
	git -C "$1" init -q &&
	printf 'hello\n' >"$1/README" &&
	git -C "$1" add README &&
	git -C "$1" commit -q -m initial
}

# tree_hash DIR: a digest of every file name, mode, symlink target and content
# under DIR (excluding .git and .forge), to prove a tree byte-for-byte unchanged.
tree_hash() {
	(cd "$1" && find . \( -name .git -o -name .forge \) -prune -o -print0 |
		LC_ALL=C sort -z |
		while IFS= read -r -d '' p; do
			if [ -L "$p" ]; then printf 'L %s -> %s\n' "$p" "$(readlink "$p")"
			elif [ -f "$p" ]; then printf 'F %s %s %s\n' "$p" "$(stat -c %a "$p")" "$(sha256sum <"$p")"
			else printf 'D %s %s\n' "$p" "$(stat -c %a "$p")"; fi
		done | sha256sum)
}

# ns_ready PID...: waits (up to 10 s) until each PID, started as
# `unshare ... -- sleep N` (or through nsenter, or `sh -c '... && exec sleep N'`),
# runs sleep: only then are its namespaces made and set up, so entering them
# with nsenter cannot act on the namespaces the test itself runs in (the
# host's, for the first one).
ns_ready() {
	for ns_pid in "$@"; do
		for _ in $(seq 1 200); do
			[ "$(cat "/proc/$ns_pid/comm" 2>/dev/null)" = sleep ] && continue 2
			sleep 0.05
		done
		echo "ns_ready: process $ns_pid never got its namespaces" >&2
		return 1
	done
}
