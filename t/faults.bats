#!/usr/bin/env bats
# Fault campaign: forge-verify --isolated killed at random moments, and
# concurrent isolated and warm runs, must never hurt the working tree nor
# leave a copy, a registration or a torn timeline behind.
load test_helper
load isolated_helper

setup() { isolated_setup; }
teardown() { forge_test_teardown; }

@test "100 runs killed at random moments (SIGINT, SIGTERM, SIGKILL): tree unchanged, nothing left after one more run" {
	printf 'a\nb\n' >tracked.txt && git add tracked.txt && git commit -q -m t
	echo 'uncommitted' >>tracked.txt
	echo 'untracked' >new.txt
	before=$(repo_state)
	sigs='INT TERM KILL'
	for i in $(seq 1 "${FAULT_RUNS:-100}"); do
		set -- $sigs
		shift $((i % 3))
		sig=$1
		perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' -- \
			forge-verify -q --isolated -- sh -c 'rm -rf ./*; sleep 0.2' >/dev/null 2>&1 &
		pid=$!
		# A moment between 0 and ~300 ms: before, during or after the copy.
		sleep "0.$(printf '%03d' $((RANDOM % 300)))"
		kill -s "$sig" "$pid" 2>/dev/null || :
		wait "$pid" || :
	done
	[ "$(repo_state)" = "$before" ]
	run forge-verify -q --isolated -- true
	assert_success
	[ "$(repo_state)" = "$before" ]
	[ "$(git worktree list --porcelain | grep -c '^worktree ')" -eq 1 ]
	[ -z "$(find "$TMPDIR" -maxdepth 1 -name 'forge-verify.*')" ]
	while IFS= read -r line; do
		printf '%s\n' "$line" | jq -e . >/dev/null
	done <.forge/timeline.jsonl
	# Killed runs are ERRORs at most: the streak counts no failure.
	[ "$(forge-state get .forge/breaker streak)" = 0 ]
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
