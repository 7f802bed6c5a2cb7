#!/usr/bin/env bats
# forge-verify --isolated --warm (SPEC 3.5): pooled copies that the steps
# cannot tell from a fresh one.
load test_helper
load isolated_helper

setup() { isolated_setup; }
teardown() { forge_test_teardown; }

pool() { printf '%s\n' "$REPO/.git/forge/pool"; }

@test "a warm copy equals the working state, run after run, whatever earlier steps did" {
	printf 'build/\n' >.gitignore
	printf 'one\n' >a.txt
	git add -A && git commit -q -m files
	echo edit >>a.txt
	echo first >untracked-1
	check_copy --warm
	# Next state: the untracked file is gone, another appears, a file is
	# deleted; the earlier run's garbage and ignored output must not survive.
	rm untracked-1
	echo second >untracked-2
	git rm -qf a.txt
	check_copy --warm
	run forge-verify --isolated --warm -- sh -c 'mkdir -p build && echo out >build/out && echo junk >junk && rm README'
	assert_success
	git reset -q -- a.txt && git checkout -q -- a.txt
	check_copy --warm
	[ -d "$(pool)/1" ] && [ ! -d "$(pool)/2" ]
}

@test "a new commit between runs: the slot moves to the new HEAD" {
	run forge-verify --isolated --warm -- true
	echo v2 >README && git commit -q -am v2
	echo v3 >added && git add added && git commit -q -m v3
	check_copy --warm
}

@test "verify.isolated.warm in the configuration selects the pool" {
	echo '{"verify": {"isolated": {"warm": true}}}' >forge.json
	run forge-verify --isolated -- sh -c 'pwd'
	assert_success
	grep -q '/forge/pool/1/' .forge/runs/*/1-command.log
	[ -z "$(find "$TMPDIR" -maxdepth 1 -name 'forge-verify.*')" ]
}

@test "two concurrent warm runs use two slots" {
	forge-verify --isolated --warm -- sh -c "touch '$SCRATCH/one'; while [ ! -e '$SCRATCH/go' ]; do sleep 0.1; done" >/dev/null 2>&1 &
	first=$!
	for _ in $(seq 1 100); do [ -e "$SCRATCH/one" ] && break; sleep 0.1; done
	run forge-verify --isolated --warm -- sh -c pwd
	assert_success
	touch "$SCRATCH/go"
	wait "$first"
	grep -rq '/forge/pool/2/' .forge/runs/
	grep -rq '/forge/pool/1/' .forge/runs/ || true
	[ -d "$(pool)/1" ] && [ -d "$(pool)/2" ]
}

@test "a background process left by a step does not hold the slot" {
	# setsid: forge-timeout ends what a step leaves in its own process group.
	run forge-verify --isolated --warm -- sh -c "setsid sh -c 'echo \$\$ >\"\$1\"; exec sleep 30' sh '$SCRATCH/bg.pid' >/dev/null 2>&1 & while [ ! -s '$SCRATCH/bg.pid' ]; do sleep 0.05; done"
	assert_success
	kill -0 "$(cat "$SCRATCH/bg.pid")" # still running
	run forge-verify --isolated --warm -- sh -c pwd
	assert_success
	[ ! -d "$(pool)/2" ]
	kill "$(cat "$SCRATCH/bg.pid")" || : # only this test's process
}

@test "a broken slot is made anew" {
	run forge-verify --isolated --warm -- true
	rm -rf .git/worktrees
	check_copy --warm
	rm -rf "$(pool)/1/repo"
	check_copy --warm
}

@test "SIGINT and SIGTERM mid-step: exit 130/143, the slot is free again, no temp dir" {
	for sig in INT TERM; do
		rm -f "$SCRATCH/started"
		perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' -- \
			forge-verify --isolated --warm -- sh -c "touch '$SCRATCH/started'; sleep 60" &
		pid=$!
		for _ in $(seq 1 100); do [ -e "$SCRATCH/started" ] && break; sleep 0.1; done
		kill -s "$sig" "$pid"
		wait "$pid" && rc=0 || rc=$?
		case $sig in INT) [ "$rc" -eq 130 ] ;; TERM) [ "$rc" -eq 143 ] ;; esac
	done
	echo change >>README
	check_copy --warm
	[ ! -d "$(pool)/2" ]
}

@test "8 concurrent warm runs: all pass, timeline exact" {
	echo change >>README
	echo '{"verify": {"breaker": {"threshold": 100}}}' >forge.json
	pids=
	for i in $(seq 1 8); do
		forge-verify -q --isolated --warm -- sh -c 'grep -q change README && echo x >junk && test ! -e junk.old; mv junk junk.old' >/dev/null 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	[ "$(grep -c '"verdict":"PASS"' .forge/timeline.jsonl)" -eq 8 ]
	[ "$(wc -l <.forge/timeline.jsonl)" -eq 8 ]
	assert_no_leftovers
}
