#!/usr/bin/env bats
# make install: --prefix and DESTDIR honoured; installed programs find the
# installed library and helpers, not the source or build tree (SPEC 1).
load test_helper

setup() {
	load_support
	forge_test_setup
}
teardown() { forge_test_teardown; }

# A source tree that can be configured out of tree: the real one, or a
# cleaned copy of it when it is configured in place.
clean_srcdir() {
	src=$abs_top_srcdir
	[ -f "$src/config.status" ] || return 0
	mkdir "$SCRATCH/src"
	(cd "$src" && tar -cf - --exclude=./_build --exclude=./.git --exclude=./.forge .) | (cd "$SCRATCH/src" && tar -xf -)
	src=$SCRATCH/src
	make -s -C "$src" distclean >/dev/null 2>&1
}

# install_to_scratch: forge configured (from clean_srcdir's tree, src) in
# the build folder build, $SCRATCH/build, built and installed to prefix,
# $SCRATCH/prefix; the build folder is the current folder.
install_to_scratch() {
	build=$SCRATCH/build prefix=$SCRATCH/prefix
	clean_srcdir
	mkdir "$build" && cd "$build"
	"$src/configure" --quiet --prefix="$prefix" >/dev/null
	make -s >/dev/null 2>&1
	make -s install >/dev/null
}

@test "installed forge-verify runs from its prefix with no FORGE_LIBDIR, and DESTDIR stages the same tree" {
	install_to_scratch
	[ -x "$prefix/bin/forge-verify" ]
	[ -x "$prefix/bin/forge-state" ]
	[ -x "$prefix/bin/forge-timeout" ]
	[ -f "$prefix/share/forge/lib-sh/forge.sh" ]
	[ -f "$prefix/share/forge/lib-sh/forge-verify.sh" ]
	[ -f "$prefix/share/man/man1/forge-verify.1" ]
	[ -f "$prefix/share/man/man7/forge.7" ]
	# The pages are indexed: apropos (man -k) finds them.
	run env MANPATH="$prefix/share/man" man -k forge-verify
	assert_success
	assert_output --partial 'forge-verify (1)'
	# The build tree is gone: only the installed files can be found.
	rm -rf "$build"
	make_repo "$SCRATCH/repo" && cd "$SCRATCH/repo"
	run env -u FORGE_LIBDIR -u FORGE_HELPERDIR PATH=/usr/bin:/bin "$prefix/bin/forge-verify" -- true
	assert_success
	assert_output --partial 'Verdict: PASS'
	grep -q "$prefix/share/forge/lib-sh" "$prefix/bin/forge-verify"
	# DESTDIR: the same layout under the staging root, paths still the prefix's.
	mkdir "$build" && cd "$build"
	"$src/configure" --quiet --prefix=/opt/forge >/dev/null
	make -s >/dev/null 2>&1
	make -s install DESTDIR="$SCRATCH/stage" >/dev/null
	[ -x "$SCRATCH/stage/opt/forge/bin/forge-verify" ]
	grep -q '/opt/forge/share/forge/lib-sh' "$SCRATCH/stage/opt/forge/bin/forge-verify"
}

@test "make install: the opencode plugin (running the installed forge-sandbox) and a 'bash' link to forge-shell for GNU make; DESTDIR keeps the prefix's paths; uninstall removes them" {
	install_to_scratch
	[ -f "$prefix/share/forge/opencode/forge.js" ]
	grep -q "\"$prefix/bin/forge-sandbox\"" "$prefix/share/forge/opencode/forge.js"
	[ "$(readlink "$prefix/libexec/forge/bash")" = "$prefix/bin/forge-shell" ]
	# One self-contained ES module: it parses, and imports only node's own.
	cp "$prefix/share/forge/opencode/forge.js" "$SCRATCH/forge.mjs"
	run node --check "$SCRATCH/forge.mjs"
	assert_success
	run grep -E '^import ' "$prefix/share/forge/opencode/forge.js"
	assert_line 'import { execFile } from "node:child_process"'
	# No import line that takes anything but node's own modules.
	run grep -vE '^import \{ [A-Za-z, ]+ \} from "node:[a-z_]+"$' <<<"$output"
	assert_failure 1
	make -s install DESTDIR="$SCRATCH/stage" >/dev/null
	[ "$(readlink "$SCRATCH/stage$prefix/libexec/forge/bash")" = "$prefix/bin/forge-shell" ]
	make -s uninstall >/dev/null
	[ ! -L "$prefix/libexec/forge/bash" ]
	[ ! -e "$prefix/share/forge/opencode/forge.js" ]
}
