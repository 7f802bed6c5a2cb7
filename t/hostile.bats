#!/usr/bin/env bats
# Hostile input: odd paths everywhere a path is taken, broken state files,
# a full filesystem. A clear error or a correct result, never lost data.
load test_helper

setup() {
	load_support
	forge_test_setup
}
teardown() {
	[ -z "${MOUNTED:-}" ] || umount "$MOUNTED" 2>/dev/null || :
	forge_test_teardown
}

@test "a repository whose path has spaces, a newline, a leading dash, globs and invalid UTF-8" {
	dir="$SCRATCH/-odd dir"$'\n'"*[?]"$'\xff'
	make_repo "$dir"
	cd "$dir"
	echo change >>README
	run forge-verify -- true
	assert_success
	run forge-verify --isolated -- sh -c 'test -f README && grep -q change README'
	assert_success
	run forge-verify --isolated --warm -- true
	assert_success
	[ "$(grep -c '"verdict":"PASS"' .forge/timeline.jsonl)" -eq 3 ]
	[ "$(tail -n 1 README)" = change ]
	[ "$(git worktree list --porcelain | grep -c "^worktree ")" -eq 1 ] # copies are never worktrees of it
}

@test "a --config path with a newline and a leading dash" {
	make_repo "$SCRATCH/repo" && cd "$SCRATCH/repo"
	cfg="$SCRATCH/-c"$'\n'"fg.json"
	echo '{"verify": {"breaker": {"threshold": 7}}}' >"$cfg"
	run forge-verify --breaker --config "$cfg"
	assert_success
	assert_output 'closed (streak 0, threshold 7)'
}

@test "a breaker file with a non-numeric streak: a data error, the file kept as it was" {
	make_repo "$SCRATCH/repo" && cd "$SCRATCH/repo"
	forge-verify -- false || :
	printf 'streak=garbage\nthreshold=3\n' >.forge/breaker
	run forge-verify -- false
	assert_failure 65
	assert_output --partial streak
	[ "$(cat .forge/breaker)" = "$(printf 'streak=garbage\nthreshold=3')" ]
	run forge-verify --breaker
	assert_failure 65
}

@test "unknown lines in the breaker file are kept and the streak goes on" {
	make_repo "$SCRATCH/repo" && cd "$SCRATCH/repo"
	forge-verify -- false || :
	printf 'some garbage line\n' >>.forge/breaker
	run forge-verify -- false
	assert_failure 1
	assert_output --partial 'not a key=value line'
	[ "$(forge-state get .forge/breaker streak)" = 2 ]
	grep -qx 'some garbage line' .forge/breaker
}

@test "a timeline torn by a crash (no final newline): the next line is whole, reports still work" {
	make_repo "$SCRATCH/repo" && cd "$SCRATCH/repo"
	forge-verify -- true
	printf '{"ts":"2026-' >>.forge/timeline.jsonl
	forge-verify -- false || :
	tail -n 1 .forge/timeline.jsonl | jq -e '.verdict == "FAIL"'
	run forge-verify --report --json
	assert_success
	echo "$output" | jq -e '.verdict == "FAIL"'
}

@test "a full filesystem under .forge: exit 73 or 74, state never half-written" {
	make_repo "$SCRATCH/repo" && cd "$SCRATCH/repo"
	forge-verify -- false || :
	cp .forge/breaker "$SCRATCH/breaker.before"
	cp .forge/timeline.jsonl "$SCRATCH/timeline.before"
	mkdir "$SCRATCH/saved" && cp -a .forge/. "$SCRATCH/saved/"
	if ! mount -t tmpfs -o size=64k tmpfs .forge 2>/dev/null; then
		[ "${CI:-}" != true ] || fail "CI runs as root and can mount a tmpfs"
		skip "cannot mount a tmpfs here"
	fi
	MOUNTED=$PWD/.forge
	cp -a "$SCRATCH/saved/." .forge/
	# Fill it up.
	dd if=/dev/zero of=.forge/filler bs=4k count=1000 2>/dev/null || :
	run forge-verify -- false
	[ "$status" -eq 73 ] || [ "$status" -eq 74 ] || fail "status $status: $output"
	cmp .forge/breaker "$SCRATCH/breaker.before"
	cmp .forge/timeline.jsonl "$SCRATCH/timeline.before"
	[ -z "$(find .forge -name '.breaker.*')" ]
}

@test "100,000 allow-list entries: bounded, correct (the 10 MB config is in config.bats)" {
	seq 1 100000 | sed 's/$/.example.com/' >"$SCRATCH/entries"
	run forge-netrule <"$SCRATCH/entries"
	assert_success
	[ "$(printf '%s\n' "$output" | grep -c -- '--net-rule')" -eq 100000 ]
}

@test "a 1 MB single line through forge-state append and get" {
	line=$(head -c 1000000 /dev/zero | tr '\0' 'x')
	forge-state append "$SCRATCH/big.jsonl" "{\"x\":\"${line:0:100000}\"}"
	jq -e '.x | length == 100000' "$SCRATCH/big.jsonl"
	printf 'k=%s\n' "$line" >"$SCRATCH/big.state"
	[ "$(forge-state get "$SCRATCH/big.state" k | wc -c)" -eq 1000001 ]
	forge-state set "$SCRATCH/big.state" other=1
	[ "$(forge-state get "$SCRATCH/big.state" k | wc -c)" -eq 1000001 ]
}
