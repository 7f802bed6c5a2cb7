#!/usr/bin/env bats
# lib-sh/forge-record.sh: a run's timeline event is written by the shell when
# its values are plain and by jq otherwise (issue 23: no jq in a plain run),
# and the two give the same line, byte for byte; so does what retention keeps.
load test_helper

setup() { repo_setup; }
teardown() { forge_test_teardown; }

# record WAY STEPS-ARGC VERDICT ISOLATED CHANGE HEAD TREE [VALUE...]: runs
# forge_record_WAY (sh or jq) in a fresh shell with the library sourced and
# prints forge_record_json, then the run IDs retention keeps, sorted; "no"
# when forge_record_sh declines. KEY, SOURCES, TESTED and STREAK are the
# record's key, whether retention is read (1), "tested" and the streak.
record() {
	local way=$1 argc=$2
	shift 2
	${FORGE_TEST_SHELL:-sh} -c '
		set -eu
		. "$FORGE_LIBDIR/forge.sh"
		forge_state_init "$PWD"
		way=$1 argc=$2
		shift 2
		forge_ts=2026-12-01T10:00:00Z forge_run_id=20261201T100000Z-42
		forge_streak=${STREAK:-0} forge_breaker=closed forge_keep_runs=3
		forge_record_"$way" "${SOURCES:-0}" null "${TESTED:-null}" "${KEY:-}" "$argc" "$@" || { echo no; exit 0; }
		printf "%s\n" "$forge_record_json"
		printf "%s\n" $forge_runs_kept | sort' sh "$way" "$argc" "$@"
}

# same ARGC VALUE...: the shell writes the record, and exactly as jq does.
same() {
	run record sh "$@"
	assert_success
	refute_output no
	local by_sh=$output
	run record jq "$@"
	assert_success
	assert_equal "$by_sh" "$output"
	# And it is one JSON value.
	head -n 1 <<<"$output" | jq -e . >/dev/null
}

# declined ARGC VALUE...: the shell leaves the record to jq, which keeps the
# values exactly.
declined() {
	run record sh "$@"
	assert_success
	assert_output no
	run record jq "$@"
	assert_success
	head -n 1 <<<"$output" | jq -e . >/dev/null
}

@test "plain values: the shell's record is jq's, byte for byte" {
	same 1 PASS false '' abc123 '' command true 0 4 '' true
	same 0 FAIL '"warm"' my-change 0123abcd fedc test 'make check' 2 1500 '' 
	same 0 ERROR '"cold"' '' '' '' build 'make -j2' 0 10 '' test 'make check' 127 3 'not found'
	same 2 PASS true '' h t command "sh -c 'exit 0'" 0 0 '' sh "-c 'x'"
	KEY=0123456789abcdef TESTED=true STREAK=2 same 0 PASS false '' h t 'a b' 'x; y <z> & $HOME `q` {}|~^[]!' 0 9 ''
	# A step name that its log name changes: [^A-Za-z0-9._-] becomes _.
	same 0 PASS false '' h t 'make check (all)' 'make check' 0 1 ''
	# No step at all (a run that could not start).
	same 0 ERROR false '' '' ''
}

@test "values a JSON string must escape, or that are not plain ASCII, go to jq" {
	declined 0 PASS false '' h t test 'echo "hi"' 0 1 ''
	declined 0 PASS false '' h t test 'a\b' 0 1 ''
	declined 0 PASS false '' h t test $'a\nb' 0 1 ''
	declined 0 PASS false '' h t test $'a\tb' 0 1 ''
	declined 0 PASS false '' h t test $'\e[31mred' 0 1 ''
	declined 0 PASS false '' h t test $'caf\xc3\xa9' 0 1 ''
	declined 0 PASS false '' h t test $'\xff' 0 1 ''
	declined 0 PASS false '' h t test $'a\x7f' 0 1 ''
	declined 1 PASS false '' h t command x 0 1 '' $'-quote"d'
	# Numbers jq would print otherwise.
	declined 0 PASS false '' h t test x 007 1 ''
	declined 0 PASS false '' h t test x 0 1234567890123456 ''
	# A long step name is reduced by jq, not character by character.
	declined 0 PASS false '' h t "$(printf 'a %.0s' $(seq 1 200))" x 0 1 ''
	# jq keeps the exact values.
	run record jq 0 PASS false '' h t test $'echo "hi"\n\\' 0 1 ''
	assert_equal "$(head -n 1 <<<"$output" | jq -r '.steps[0].run')" $'echo "hi"\n\\'
}

# timeline LINE...: writes the lines as the timeline, and a finished run
# folder so that retention reads it.
timeline() {
	mkdir -p .forge/runs
	printf '%s\n' "$@" >.forge/timeline.jsonl
}

@test "what retention keeps: the shell reads forge's records as jq does, reused runs too" {
	a='{"ts":"2026-12-01T09:00:00Z","event":"verify","run":"20261201T090000Z-1","verdict":"PASS","isolated":false,"sandbox":null,"change":null,"head":null,"tree":null,"tested":null,"reused":null,"steps":[{"name":"x","run":"echo \"reused\":{\"run\":\"nope\"}","argv":null,"exit":0,"ms":1,"reason":null,"log":"l"}],"streak":0,"breaker":"closed"}'
	b='{"ts":"2026-12-01T09:00:01Z","event":"verify","run":"20261201T090001Z-2","verdict":"PASS","isolated":false,"sandbox":null,"change":null,"head":"h","tree":"t","tested":null,"reused":{"run":"20261130T000000Z-9","host":"ci"},"steps":[],"streak":0,"breaker":"closed","key":"k"}'
	c='{"ts":"2026-12-01T09:00:02Z","event":"breaker-reset","streak":0,"previous_streak":3,"breaker":"closed"}'
	timeline "$a" "$b" "$c" "$a"
	SOURCES=1 same 0 PASS false '' h t test x 0 1 ''
	run record sh 0 PASS false '' h t test x 0 1 ''
	SOURCES=1 run record sh 0 PASS false '' h t test x 0 1 ''
	assert_line 20261130T000000Z-9
	assert_line 20261201T090000Z-1
	assert_line 20261201T090001Z-2
	refute_line nope
	# A change record is read too, but not the one this record replaces.
	mkdir -p .forge/changes
	d=${a//090000Z-1/090003Z-3}
	d=${d/09:00:00Z/09:00:03Z}
	printf '%s\n' "$d" >.forge/changes/other.json
	printf '%s\n' "${a//090000Z-1/090004Z-4}" >.forge/changes/mine.json
	SOURCES=1 same 0 PASS false mine h t test x 0 1 ''
	SOURCES=1 run record sh 0 PASS false mine h t test x 0 1 ''
	assert_line 20261201T090003Z-3
	refute_line 20261201T090004Z-4
}

# left_to_jq LINE: with LINE as the timeline, the shell leaves what
# retention keeps to jq, which reads it (its output is then "output").
left_to_jq() {
	timeline "$1"
	SOURCES=1 run record sh 0 PASS false '' h t test x 0 1 ''
	assert_output no
	SOURCES=1 run record jq 0 PASS false '' h t test x 0 1 ''
	assert_success
}

@test "a record of another shape, or a broken one, is left to jq" {
	for line in '{"event":"verify","ts":"2026-12-01T09:00:00Z","run":"r1","reused":null,"steps":[]}' \
		'{"ts":"2026-12-01T09:00:00Z","event":"verify","run":"r2","reused":{"host":"h","run":"r3"},"steps":[]}' \
		'{"ts":"2026-12-01T09:00:00Z","event":"verify","run":"r4"' \
		'{"ts":"2026-12-01T09:00:00Z","event":"verify","run":"r5","steps":[]}'; do
		left_to_jq "$line"
	done
	# jq reads what it can: the record out of order is still read.
	timeline '{"event":"verify","ts":"2026-12-01T09:00:00Z","run":"r1","reused":null,"steps":[]}'
	SOURCES=1 run record jq 0 PASS false '' h t test x 0 1 ''
	assert_line r1
}

@test "retention: a record the shell would read otherwise than jq is left to jq" {
	r='{"ts":"2026-12-01T09:00:00Z","event":"verify","run":"20261201T090000Z-1","verdict":"PASS","isolated":false,"sandbox":null,"change":null,"head":null,"tree":null,"tested":null,"reused":null,"steps":[],"streak":0,"breaker":"closed"}'
	# An escaped run ID: jq reads 20261201T090000Z-1, whose folder the
	# shell's reading would let retention remove.
	left_to_jq "${r/Z-1\"/Z-\\u0031\"}"
	assert_line 20261201T090000Z-1
	# A reused run's ID likewise.
	left_to_jq "${r/\"reused\":null/\"reused\":{\"run\":\"20261201T090000Z-\\u0032\",\"host\":\"h\"\}}"
	assert_line 20261201T090000Z-2
	# A line cut short, or two records on one line: jq reads neither.
	for line in "${r%\"streak\"*}" "${r%?}" "$r$r"; do
		left_to_jq "$line"
		refute_line 20261201T090000Z-1
	done
	# A CRLF line is read, by both.
	timeline "$r"$'\r'
	SOURCES=1 same 0 PASS false '' h t test x 0 1 ''
	SOURCES=1 run record sh 0 PASS false '' h t test x 0 1 ''
	assert_line 20261201T090000Z-1
}

@test "retention: a record with a second key of one name is left to jq, which reads the last" {
	r='{"ts":"2026-12-01T09:00:00Z","event":"verify","run":"20261201T090000Z-1","verdict":"PASS","isolated":false,"sandbox":null,"change":null,"head":null,"tree":null,"tested":null,"reused":null,"steps":[],"streak":0,"breaker":"closed"}'
	for line in "${r/\"verdict\"/\"run\":\"20261201T090000Z-2\",\"verdict\"}" \
		"${r/%\}/,\"run\":\"20261201T090000Z-2\"\}}" \
		"$(sed 's/"reused":null/"reused":{"run":"20261201T090000Z-2","host":"h"}/; s/"sandbox":null/"sandbox":{"a":1,"reused":null,"steps":[]}/' <<<"$r")" \
		"${r/\"reused\":null/\"reused\":null,\"steps\":[],\"reused\":{\"run\":\"20261201T090000Z-2\"\}}" \
		"${r/\"steps\":\[\]/\"steps\":[],\"reused\":{\"run\":\"20261201T090000Z-2\"\}}"; do
		left_to_jq "$line"
		assert_line 20261201T090000Z-2
	done
}

@test "retention: a timeline line that is not UTF-8 (a character cut short) still keeps its runs, in a UTF-8 locale" {
	r='{"ts":"2026-12-01T09:00:00Z","event":"verify","run":"20261201T090000Z-1","verdict":"PASS","isolated":false,"sandbox":null,"change":null,"head":null,"tree":null,"tested":null,"reused":null,"steps":[],"streak":0,"breaker":"closed"}'
	b=${r/closed/$'\xc3'}
	timeline "${b/Z-1/Z-2}" "$r"
	LC_ALL=C.UTF-8 SOURCES=1 run record jq 0 PASS false '' h t test x 0 1 ''
	assert_line 20261201T090000Z-1
	assert_line 20261201T090000Z-2
	LC_ALL=C.UTF-8 SOURCES=1 run record sh 0 PASS false '' h t test x 0 1 ''
	assert_line 20261201T090000Z-1
	assert_line 20261201T090000Z-2
}
