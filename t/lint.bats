#!/usr/bin/env bats
# Every shell file is shellcheck-clean and parses under dash, bash and
# busybox sh (SPEC section 1).
load test_helper

setup() {
	load_support
	forge_test_setup
	cd "$abs_top_srcdir"
}
teardown() { forge_test_teardown; }

# shell_files: every POSIX shell file of the project, one per line.
shell_files() {
	for f in bin/*.in lib-sh/*.sh lib-sh/forge.sh.in container/forge-* bench/*.sh .ci/run; do
		[ -f "$f" ] && printf '%s\n' "$f"
	done
}

@test "shellcheck: the programs, with the library they source" {
	need shellcheck
	for f in bin/*.in; do
		shellcheck -x "$f"
	done
}

@test "shellcheck: the library entry point and its parts" {
	need shellcheck
	# The library hands results to its callers in forge_* variables, which
	# look unused from inside it (SC2034); the programs above check them.
	shellcheck -x -e SC2034 lib-sh/forge.sh.in
}

# shellcheck reports nothing inside a file it only follows with -x: each part
# of the library is checked on its own too. Variables set in one part and
# read in another (SC2154) are checked once over the whole library below.
@test "shellcheck: every part of the library on its own" {
	need shellcheck
	for f in lib-sh/*.sh; do
		# (An in-tree build makes lib-sh/forge.sh from forge.sh.in: checked above.)
		[ "$f" != lib-sh/forge.sh ] || continue
		# Each part names its dialect: sh, or dash for POSIX sh plus local.
		shellcheck -e SC2034,SC2154 "$f"
	done
}

@test "shellcheck: no variable of the library is read without being set anywhere" {
	need shellcheck
	{ printf '#!/bin/sh\n'; cat lib-sh/forge.sh.in lib-sh/*.sh; } >"$SCRATCH/library.sh"
	run shellcheck -s sh --include=SC2154 "$SCRATCH/library.sh"
	assert_success
	assert_output ''
}

@test "shellcheck: container scripts, benchmarks, CI and the test helpers" {
	need shellcheck
	for f in container/forge-* bench/*.sh .ci/run; do
		[ -f "$f" ] || continue
		shellcheck -x "$f"
	done
	shellcheck -s bash t/*.bash
}

@test "every shell file parses under dash, bash and busybox sh" {
	need dash
	need busybox
	for f in $(shell_files); do
		dash -n "$f"
		bash -n "$f"
		busybox sh -n "$f"
	done
}

@test "man pages render without warnings" {
	need groff
	for m in man/*.1 man/*.7; do
		run groff -man -Tutf8 -ww -z "$m"
		assert_success
		assert_output ''
	done
}

@test "the C helpers compile cleanly with gcc and clang: -std=c99 -Wall -Wextra -pedantic -Werror" {
	for cc in gcc clang; do
		need "$cc"
		for c in helpers/*.c t/netrule-unit.c; do
			"$cc" -std=c99 -Wall -Wextra -pedantic -Werror -D_POSIX_C_SOURCE=200809L \
				-DFORGE_VERSION='"lint"' -fsyntax-only "$c"
		done
	done
}

@test "tests: a test waits only for the PIDs it started (bats's per-test timeout is a background job of its shell too)" {
	run grep -n -E '(^|[;&|({[:space:]])(wait[[:space:]]*($|[;&|)}%])|jobs[[:space:]]+-p)' t/*.bats t/*.bash
	assert_failure
	assert_output ''
}

@test "tests: no assertion that cannot fail (a non-final 'a && b' of tests, or '! cmd')" {
	# Under set -e a failing 'a' in 'a && b', or a '! cmd' that succeeds,
	# ends nothing unless the line is the test's last.
	run awk '
		/^@test / { intest = 1; prev = ""; next }
		intest && /^}/ { intest = 0; prev = ""; next }
		!intest { next }
		/^[ \t]*(#|$)/ { next }
		{
			if (prev != "") print prev
			prev = ""
			# Not a continuation (of a chain or of a quoted script).
			if (last !~ /(&&|\||\\)$/) {
				if ($0 ~ /^\t+\[\[? .* \]\]? && \[\[? .* \]\]?$/ && $0 !~ /\|\|/) prev = FILENAME ":" FNR ": " $0
				else if ($0 ~ /^\t+! /) prev = FILENAME ":" FNR ": " $0
			}
			last = $0
		}' t/*.bats
	assert_success
	assert_output ''
}
