#!/usr/bin/env bats
# Fault campaign: forge-verify killed at random moments, concurrent plain,
# isolated and warm runs, and hostile clones must never hurt the working
# tree nor anything outside it, nor leave a copy, a registration or a torn
# timeline behind. The campaign itself is bench/faults.sh, which anyone can
# run; this file runs it and holds the regressions it found.
load test_helper
load isolated_helper

setup() { isolated_setup; }
teardown() { forge_test_teardown; }

@test "the fault campaign (bench/faults.sh): random kills, 30 concurrent runs, hostile clones; every property holds" {
	# KILLS runs killed with SIGINT, SIGTERM, SIGKILL in turn, plain,
	# isolated and warm; 30 concurrent passing and failing runs; a clone
	# committing .forge/runs -> ../.. and the other state paths as links or
	# FIFOs. The script checks each property and exits 1 naming what broke.
	run env KILLS="${FAULT_RUNS:-90}" CONCURRENT=30 FORGE_BUILDDIR="$abs_top_builddir" \
		"$abs_top_srcdir/bench/faults.sh"
	printf '# %s\n' "${lines[@]}" >&3
	assert_success
	assert_line --partial 'repository unchanged: yes; copies left: 0;'
	assert_line --partial 'parallel: 30 concurrent passing runs: 30 PASS; 30 concurrent failing runs: streak 30;'
	assert_line --partial '0 hangs, 0 changed anything outside the clone'
	assert_line 'faults: every property held'
}

@test "8 concurrent isolated and 8 concurrent warm failing runs: streak exactly 16, 16 intact lines" {
	echo '{"verify": {"breaker": {"threshold": 100}}}' >forge.json
	pids=
	for i in $(seq 1 8); do
		forge-verify -q --isolated -- false >/dev/null 2>&1 &
		pids="$pids $!"
		forge-verify -q --isolated --warm -- false >/dev/null 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p" || :; done
	[ "$(forge-state get .forge/breaker streak)" = 16 ]
	[ "$(wc -l <.forge/timeline.jsonl)" -eq 16 ]
	[ "$(jq -r .verdict .forge/timeline.jsonl | sort -u)" = FAIL ]
	[ "$(jq -r .streak .forge/timeline.jsonl | sort -n | tr '\n' ' ')" = "$(seq 1 16 | tr '\n' ' ')" ]
	assert_no_leftovers
}
