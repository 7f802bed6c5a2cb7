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
	for f in bin/*.in lib-sh/*.sh lib-sh/*.sh.in container/forge-* bench/*.sh .ci/run; do
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
	shellcheck -x lib-sh/forge.sh.in
}

# shellcheck reports nothing inside a file it only follows with -x: each part
# of the library is checked on its own too, with no check left out. Each part
# names lib-sh/forge-vars.sh for shellcheck, so the globals the parts share
# are known to it (forge-vars.sh is checked below against the code).
@test "shellcheck: every part of the library on its own" {
	need shellcheck
	for f in lib-sh/*.sh; do
		# (An in-tree build makes lib-sh/forge.sh and forge-sandbox-parts.sh
		# from their .in files: checked above, as forge.sh.in reads them.)
		[ "$f" != lib-sh/forge.sh ] && [ "$f" != lib-sh/forge-sandbox-parts.sh ] || continue
		# Each part names its dialect: dash, for POSIX sh plus local.
		shellcheck -x -P SCRIPTDIR "$f"
	done
}

# vars_declared KIND: the names lib-sh/forge-vars.sh declares, one per line:
# settings (what a program sets) or results (what loading forge.sh empties).
vars_declared() {
	awk -v kind="$1" '/^# Results/ { results = 1 }
		/^: "\$\{forge_[a-z0-9_]+[:]?=/ {
			v = $2; sub(/^"\$\{/, "", v); sub(/[:]?=.*/, "", v)
			if ((kind == "results") == (results == 1)) print v
		}' lib-sh/forge-vars.sh | sort
}

@test "every global the library assigns is declared in forge-vars.sh" {
	vars_declared results >"$SCRATCH/results"
	vars_declared settings >"$SCRATCH/settings"
	sort -u "$SCRATCH/results" "$SCRATCH/settings" >"$SCRATCH/declared"
	awk -f t/globals.awk $(ls lib-sh/*.sh | grep -v -e /forge-vars.sh -e /forge.sh) \
		lib-sh/forge.sh.in >"$SCRATCH/found"
	run sh -c 'awk "{ print \$2 }" "$1" | sort -u | comm -23 - "$2"' sh "$SCRATCH/found" "$SCRATCH/declared"
	assert_success
	assert_output ''
}

@test "globals.awk names each global a function assigns outside local" {
	cat >"$SCRATCH/part.sh" <<-'EOF'
	forge_a() {
		local forge_kept
		forge_kept=1 forge_leak=2
		read -r forge_read
		for forge_loop in 1; do :; done
		mitmdump --set forge_option=1
		# forge_comment=1
	}
	forge_b() ( forge_sub=1 )
	forge_c() { forge_one=1; }
	forge_top=1
	EOF
	cd "$SCRATCH"
	run awk -f "$abs_top_srcdir/t/globals.awk" part.sh
	assert_success
	assert_line -n 0 'part.sh forge_leak forge_a'
	assert_line -n 1 'part.sh forge_read forge_a'
	assert_line -n 2 'part.sh forge_loop forge_a'
	assert_line -n 3 'part.sh forge_one forge_c'
	assert_line -n 4 'part.sh forge_top -'
	assert_equal "${#lines[@]}" 5
}

@test "forge-vars.sh declares no global that nothing assigns" {
	vars_declared results >"$SCRATCH/results"
	awk -f t/globals.awk $(ls lib-sh/*.sh | grep -v -e /forge-vars.sh -e /forge.sh) \
		lib-sh/forge.sh.in | awk '{ print $2 }' | sort -u >"$SCRATCH/assigned"
	run comm -23 "$SCRATCH/results" "$SCRATCH/assigned"
	assert_success
	assert_output ''
}

@test "loading forge.sh empties every result forge-vars.sh declares" {
	vars_declared results >"$SCRATCH/results"
	awk '/^unset / { more = 1 } more { for (i = 1; i <= NF; i++) if ($i ~ /^forge_/) print $i
		more = /\\$/ }' lib-sh/forge-vars.sh | sort >"$SCRATCH/unset"
	run diff "$SCRATCH/results" "$SCRATCH/unset"
	assert_success
	# And it does: a result from the caller's environment is gone.
	run env forge_run_id=planted forge_prog=kept sh -c '. "$1/forge.sh"; printf "[%s] %s\n" "$forge_run_id" "$forge_prog"' sh "$FORGE_LIBDIR"
	assert_success
	assert_output '[] kept'
}

@test "shellcheck: no variable of the library is read without being set anywhere" {
	need shellcheck
	{ printf '#!/bin/sh\n'; cat lib-sh/forge.sh.in lib-sh/*.sh; } >"$SCRATCH/library.sh"
	run shellcheck -s sh --include=SC2154 "$SCRATCH/library.sh"
	assert_success
	assert_output ''
}

# .shellcheckrc lets a plain "shellcheck FILE" follow what a file sources,
# from any folder: a program finds the library, a part forge-vars.sh.
@test "shellcheck with no option, from another folder: a program and a library part are clean" {
	need shellcheck
	cd "$SCRATCH"
	run shellcheck "$abs_top_srcdir/bin/forge-verify.in" "$abs_top_srcdir/lib-sh/forge-steps.sh" \
		"$abs_top_srcdir/bench/reuse.sh"
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
