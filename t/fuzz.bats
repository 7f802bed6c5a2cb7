#!/usr/bin/env bats
# The libFuzzer harnesses (make fuzz): forge-netrule's validation,
# forge-state's file handling, forge-egress's request parser (http-head.c)
# and its public-address test (public-addr.c), each for
# FUZZ_SECONDS (default 10; CI sets more), from the seed corpus. A crash or a
# broken invariant fails the test.
load test_helper

setup() {
	load_support
	forge_test_setup
	: "${FUZZ_SECONDS:=10}"
}
teardown() { forge_test_teardown; }

# need_libfuzzer: clang that links a libFuzzer program, else skip (fail in CI).
need_libfuzzer() {
	local why=''
	printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$SCRATCH/probe.c"
	if ! command -v clang >/dev/null; then
		why='no clang'
	elif ! clang -fsanitize=fuzzer,address,undefined -o "$SCRATCH/probe" "$SCRATCH/probe.c" 2>/dev/null; then
		why='clang cannot link a libFuzzer program (Debian: apt-get install libclang-rt-dev)'
	fi
	[ -z "$why" ] && return 0
	[ "${CI:-}" != true ] || fail "CI=true but $why"
	skip "$why"
}

fuzz() {
	need_libfuzzer
	run make -s -C "$abs_top_builddir" "fuzz-$1" FUZZ_SECONDS="$FUZZ_SECONDS"
	assert_success
	assert_output --partial 'Done '
	refute_output --partial 'invariant violated'
	# The run count, for the record (docs/RELIABILITY.md).
	printf '%s\n' "$output" | grep 'Done ' | sed "s/^/# fuzz-$1: /" >&3
}

@test "fuzzing forge-netrule's validation finds no crash and no broken invariant" {
	fuzz netrule
}

@test "fuzzing forge-state's file handling finds no crash and no broken invariant" {
	fuzz state
}

@test "fuzzing forge-egress's request parser (http-head.c) finds no crash and no broken invariant" {
	fuzz http-head
}

@test "fuzzing forge-egress's public-address test (public-addr.c) finds no crash and no broken invariant" {
	fuzz public-addr
}
