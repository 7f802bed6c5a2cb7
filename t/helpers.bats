#!/usr/bin/env bats
# What every C helper does the same way (forge-util.c): -h, --help and
# --version, and a usage error (SPEC 1, 2).
load test_helper
setup() {
	load_support
	forge_test_setup
	H=$abs_top_builddir/helpers
	# forge-seccomp is built only where configure found libseccomp.
	[ -x "$H/forge-seccomp" ] || helpers=("${helpers[@]/forge-seccomp/}")
}
teardown() { forge_test_teardown; }

bats_require_minimum_version 1.5.0

# Every C program of helpers/ (forge-shell answers -h as bash does: its own test).
helpers=(forge-state forge-timeout forge-netrule forge-egress forge-relay forge-seccomp
	forge-sandbox-init forge-probe forge-shell forge-index-tree)

# run_clean HELPER OPTION: bats' run of the helper with OPTION, which must
# exit 0 with nothing on stderr.
run_clean() {
	run --separate-stderr "$H/$1" "$2"
	[ "$status" -eq 0 ] || fail "$1 $2: $status"
	[ -z "$stderr" ] || fail "$1 $2: stderr: $stderr"
}

@test "the list above names every program in helpers/" {
	local f name found
	for f in "$abs_top_srcdir"/helpers/forge-*.c; do
		name=$(basename "$f" .c)
		[ "$name" != forge-util ] || continue
		found=
		for h in "${helpers[@]}"; do
			[ "$h" != "$name" ] || found=1
		done
		[ -n "$found" ] || fail "$name is not in the list of helpers"
	done
}

@test "--help: the synopsis ('usage: PROG') and the help on stdout, nothing on stderr, 0" {
	local h
	for h in "${helpers[@]}"; do
		[ -n "$h" ] || continue
		run_clean "$h" --help
		[[ ${lines[0]} == "usage: $h "* || ${lines[0]} == "usage: $h" ]] || fail "$h --help: ${lines[0]}"
		[ "${#lines[@]}" -gt 1 ] || fail "$h --help prints only the synopsis"
	done
}

@test "-h is --help, for every helper but forge-shell" {
	local h want
	for h in "${helpers[@]}"; do
		[ -n "$h" ] && [ "$h" != forge-shell ] || continue
		want=$("$H/$h" --help)
		run_clean "$h" -h
		[ "$output" = "$want" ] || fail "$h -h: $output"
	done
}

@test "forge-shell -h is the shell's -h (SPEC 4.4), never forge-shell's help" {
	unset FORGE_SANDBOX_CONTAINER
	FORGE_HOST_SHELL=/bin/bash run --separate-stderr "$H/forge-shell" -h -c 'printf "%s\n" "$-"'
	assert_success
	assert_output --regexp '^[a-zA-Z]*h[a-zA-Z]*$'
}

@test "--version prints 'PROG VERSION' and nothing else" {
	local h
	for h in "${helpers[@]}"; do
		[ -n "$h" ] || continue
		run_clean "$h" --version
		[[ $output =~ ^$h\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "$h --version: $output"
	done
}

@test "a usage error: 64, 'PROG: error: ...' then the synopsis on stderr, nothing on stdout" {
	local h
	for h in "${helpers[@]}"; do
		[ -n "$h" ] && [ "$h" != forge-shell ] || continue  # its arguments are the shell's
		run --separate-stderr "$H/$h" --no-such-option
		[ "$status" -eq 64 ] || fail "$h --no-such-option: $status"
		[ -z "$output" ] || fail "$h --no-such-option: stdout: $output"
		[[ ${stderr_lines[0]} == "$h: error: "* ]] || fail "$h: ${stderr_lines[0]}"
		[[ ${stderr_lines[1]} == "usage: $h"* ]] || fail "$h: ${stderr_lines[1]}"
	done
}

@test "--help when stdout cannot be written: 70, not a silent 0" {
	local h
	[ -w /dev/full ] || skip "no /dev/full"
	for h in "${helpers[@]}"; do
		[ -n "$h" ] || continue
		run bash -c '"$1" --help >/dev/full 2>/dev/null' _ "$H/$h"
		[ "$status" -eq 70 ] || fail "$h --help >/dev/full: $status"
	done
}
