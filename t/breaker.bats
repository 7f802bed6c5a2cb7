#!/usr/bin/env bats
# The failure-streak circuit breaker (SPEC 3.4) and lossless concurrent
# updates of the streak and the timeline (SPEC 3.3).
load test_helper

setup() { repo_setup; }
teardown() { forge_test_teardown; }

@test "FAIL, FAIL, FAIL: the third opens the breaker and exits 2 with the OPEN line" {
	run forge-verify -- false
	assert_failure 1
	run forge-verify -- false
	assert_failure 1
	run --separate-stderr forge-verify -- false
	assert_failure 2
	assert_output 'Verdict: FAIL'
	[[ $stderr == *'Breaker: OPEN (3 consecutive failures, threshold 3)'* ]]
	[ "$(streak)" = 3 ]
	[ "$(tail -n 1 .forge/timeline.jsonl | jq -r .breaker)" = open ]
	# It stays open: every further FAIL exits 2.
	run forge-verify -- false
	assert_failure 2
}

@test "a PASS closes the breaker and resets the streak" {
	for _ in 1 2 3; do forge-verify -- false || true; done
	run forge-verify -- true
	assert_success
	[ "$(streak)" = 0 ]
	run forge-verify -- false
	assert_failure 1
}

@test "three environment errors (a tool missing under make, pytest refusing to start, a missing import) leave the streak at 0" {
	unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
	mkdir -p "$SCRATCH/bin" mypkg
	printf '#!/bin/sh\nexit 4\n' >"$SCRATCH/bin/pytest"
	chmod +x "$SCRATCH/bin/pytest"
	touch mypkg/__init__.py
	printf 'test:\n\tno-such-coverage-forge run\n' >Makefile
	run forge-verify
	assert_failure 69
	PATH=$SCRATCH/bin:$PATH run forge-verify -- pytest
	assert_failure 69
	run forge-verify -- python3 -c 'raise ModuleNotFoundError("No module named '"'mypkg'"'")'
	assert_failure 69
	[ "$(forge-state get .forge/breaker streak 0)" = 0 ]
	run forge-verify --breaker
	assert_success
	[ "$(grep -c '"verdict":"ERROR"' .forge/timeline.jsonl)" = 3 ]
}

@test "an ERROR (bad config) leaves the streak alone" {
	forge-verify -- false || true
	forge-verify -- false || true
	echo '{"verify": ' >forge.json
	run forge-verify -- false
	assert_failure 65
	[ "$(streak)" = 2 ]
	[ "$(tail -n 1 .forge/timeline.jsonl | jq -r .verdict)" = ERROR ]
	rm forge.json
	run forge-verify -- false
	assert_failure 2
}

@test "--breaker prints closed/open with the streak and exits 0/2" {
	run forge-verify --breaker
	assert_success
	assert_output 'closed (streak 0, threshold 3)'
	for _ in 1 2 3; do forge-verify -- false || true; done
	run forge-verify --breaker
	assert_failure 2
	assert_output 'open (streak 3, threshold 3)'
	run forge-verify --breaker --json
	assert_failure 2
	echo "$output" | jq -e '.breaker == "open" and .streak == 3 and .threshold == 3'
}

@test "--reset closes the breaker and logs a breaker-reset event" {
	for _ in 1 2 3; do forge-verify -- false || true; done
	run forge-verify --reset
	assert_success
	[ "$(streak)" = 0 ]
	tail -n 1 .forge/timeline.jsonl | jq -e '.event == "breaker-reset" and .streak == 0 and .previous_streak == 3'
	run forge-verify --breaker
	assert_success
}

@test "the threshold comes from verify.breaker.threshold" {
	echo '{"verify": {"breaker": {"threshold": 1}}}' >forge.json
	run --separate-stderr forge-verify -- false
	assert_failure 2
	[[ $stderr == *'Breaker: OPEN (1 consecutive failures, threshold 1)'* ]]
	echo '{"verify": {"breaker": {"threshold": 5}}}' >forge.json
	run forge-verify --breaker
	assert_success
	assert_output 'closed (streak 1, threshold 5)'
}

@test "a bad threshold is a config error naming the key" {
	echo '{"verify": {"breaker": {"threshold": 0}}}' >forge.json
	run forge-verify -- true
	assert_failure 65
	assert_output --partial 'verify.breaker.threshold'
}

@test "16 concurrent failing runs: streak exactly 16, 16 intact timeline lines" {
	echo '{"verify": {"breaker": {"threshold": 100}}}' >forge.json
	pids=
	for i in $(seq 1 16); do
		forge-verify -q --change "c$i" -- sh -c 'exit 1' >/dev/null 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p" || true; done
	[ "$(streak)" = 16 ]
	[ "$(wc -l <.forge/timeline.jsonl)" -eq 16 ]
	while IFS= read -r line; do
		printf '%s\n' "$line" | jq -e '.event == "verify" and .verdict == "FAIL"' >/dev/null
	done <.forge/timeline.jsonl
	# every streak value 1..16 was handed out exactly once
	[ "$(jq -r .streak .forge/timeline.jsonl | sort -n | tr '\n' ' ')" = "$(seq 1 16 | tr '\n' ' ')" ]
	[ "$(find .forge/changes -name '*.json' | wc -l)" -eq 16 ]
}

@test "--breaker on a bad forge.json reports the stored state with a warning, never 65 nor a false open" {
	echo '{"verify": {"breaker": {"threshold": 2}}}' >forge.json
	forge-verify -- false || :
	echo '{"verify": ' >forge.json
	run --separate-stderr forge-verify --breaker
	assert_success
	assert_output 'closed (streak 1, threshold 2)'
	[[ $stderr == *'warning: configuration not usable, showing the stored breaker state: '*forge.json* ]]
	forge-state set .forge/breaker streak=2
	run --separate-stderr forge-verify --breaker --json
	assert_failure 2
	assert_output '{"breaker":"open","streak":2,"threshold":2}'
}
