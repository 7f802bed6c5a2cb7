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

# --- symlinks in .forge: never written, appended or deleted through --------

# hostile_clone LINK TARGET: a repository that commits a symbolic link LINK
# (a path under .forge/) pointing at TARGET, cloned, as a victim would get
# it, into $SCRATCH/clones/victim; cd there. The folder the clone sits in
# holds "precious" files that must survive anything forge does.
hostile_clone() {
	local origin=$SCRATCH/origin
	cd "$SCRATCH"
	rm -rf "$origin" "$SCRATCH/clones"
	make_repo "$origin"
	mkdir -p "$origin/$(dirname "$1")"
	ln -s "$2" "$origin/$1"
	git -C "$origin" add -f -- "$1"
	git -C "$origin" commit -q -m "hostile $1"
	mkdir -p "$SCRATCH/clones/precious-dir"
	echo precious >"$SCRATCH/clones/precious"
	echo precious >"$SCRATCH/clones/precious-dir/file"
	git clone -q "$origin" "$SCRATCH/clones/victim"
	cd "$SCRATCH/clones/victim"
	[ -L "$1" ]
	OUTSIDE=$(tree_hash "$SCRATCH/clones")
}

# outside_untouched: the clone's folder, apart from the clone itself, is as
# it was (tree_hash leaves out .git and .forge, so hash the rest by hand).
outside_untouched() {
	[ "$(cat "$SCRATCH/clones/precious")" = precious ]
	[ "$(cat "$SCRATCH/clones/precious-dir/file")" = precious ]
	[ "$(find "$SCRATCH/clones" -mindepth 1 -maxdepth 1 | sort | tr '\n' ' ')" = \
		"$SCRATCH/clones/precious $SCRATCH/clones/precious-dir $SCRATCH/clones/victim " ]
	[ "$(find "$SCRATCH/clones/precious-dir" -mindepth 1 | wc -l)" -eq 1 ]
}

@test "a clone that commits .forge/runs -> ../..: refused with 73 naming it; nothing outside is touched" {
	hostile_clone .forge/runs ../..
	for args in '-- true' '--isolated -- true' '--change c -- false'; do
		read -ra words <<<"$args"
		run forge-verify "${words[@]}"
		assert_failure 73
		assert_output --partial "$PWD/.forge/runs is a symbolic link"
		outside_untouched
	done
	[ ! -e .forge/timeline.jsonl ]
}

# refused_if_used PATH ARGS NAMED WHAT: the last `run forge-verify ARGS`,
# PATH being hostile: when the mode uses PATH (the test's uses), 73 with
# NAMED in the output; else at least no hang (timeout's 124). WHAT starts
# each failure's message.
refused_if_used() {
	if uses "$1" "$2"; then
		[ "$status" -eq 73 ] || fail "$4, forge-verify $2: status $status: $output"
		assert_output --partial "$3"
	else
		[ "$status" -ne 124 ] || fail "$4, forge-verify $2: a hang"
	fi
}

@test "every state path of .forge as a committed symlink: 73 naming it, never written through, for every mode" {
	# Which modes use which path (the others must not touch it either).
	uses() {
		case "$1 $2" in
		'.forge/changes --breaker' | '.forge/timeline.jsonl --breaker') return 1 ;;
		'.forge/timeline.jsonl --report --change c') return 1 ;;
		'.forge/breaker --report --change c') return 1 ;;
		'.forge/changes/c.json '*--change*) return 0 ;;
		'.forge/changes/c.json '*) return 1 ;;
		esac
	}
	for link in .forge .forge/changes .forge/timeline.jsonl .forge/breaker .forge/changes/c.json; do
		for target in ../.. ../../precious ../../precious-dir /nonexistent-forge-target; do
			hostile_clone "$link" "$target"
			for args in '-- true' '--change c -- false' '--reset' '--breaker' '--report --change c'; do
				read -ra words <<<"$args"
				run timeout 60 forge-verify "${words[@]}"
				refused_if_used "$link" "$args" "$PWD/$link is a symbolic link" "$link -> $target"
				outside_untouched
				[ ! -e /nonexistent-forge-target ]
			done
			[ -L "$link" ] # refused, not replaced: it is a tracked file of the clone
		done
	done
}

@test "forge-sandbox's record under a symlinked .forge: refused with a warning, nothing created outside" {
	hostile_clone .forge ../precious-dir
	run sh -c '. "$FORGE_LIBDIR/forge.sh" && forge_sandbox_egress= forge_sandbox_image=img &&
		forge_sandbox_record_create "$PWD" forge-x'
	assert_success
	assert_output --partial "cannot record what forge-x is created with in $PWD/.forge/sandbox/forge-x: $PWD/.forge is a symbolic link"
	outside_untouched
}

@test "symlinks inside .forge/runs are neither followed nor removed by pruning" {
	forge_test_repo
	mkdir -p "$SCRATCH/victim" "$SCRATCH/victim2" .forge/runs
	echo keep >"$SCRATCH/victim/file"
	echo keep >"$SCRATCH/victim2/file"
	ln -s "$SCRATCH/victim" .forge/runs/0-x
	ln -s "$SCRATCH/victim2" .forge/runs/20200101T000000Z-999999
	for i in $(seq 1 22); do mkdir ".forge/runs/1-$i"; done
	for _ in 1 2 3; do
		run forge-verify -q -- true
		assert_success
	done
	[ "$(cat "$SCRATCH/victim/file")" = keep ]
	[ "$(cat "$SCRATCH/victim2/file")" = keep ]
	[ -L .forge/runs/0-x ]
	[ -L .forge/runs/20200101T000000Z-999999 ]
}

@test "run folders are 0700 and logs 0600, whatever the umask" {
	forge_test_repo
	umask 022
	forge-verify -q -- sh -c 'echo secret' >/dev/null
	echo '{"verify": {"steps": [{"name": "a b", "run": "echo secret"}]}}' >forge.json
	forge-verify -q >/dev/null
	[ "$(stat -c %a .forge/runs)" = 700 ]
	for d in .forge/runs/*/; do [ "$(stat -c %a "$d")" = 700 ]; done
	[ "$(find .forge/runs -name '*.log' | wc -l)" -eq 2 ]
	for f in .forge/runs/*/*.log; do [ "$(stat -c %a "$f")" = 600 ]; done
}

@test "setup logs are 0600 in the 0700 run folder too, whatever the umask" {
	forge_test_repo
	umask 022
	echo '{"verify": {"isolated": {"setup": [{"name": "de/ps", "run": "echo secret"}]}}}' >forge.json
	for mode in '' --warm; do
		run forge-verify --isolated $mode -q -- true
		assert_success
	done
	[ "$(find .forge/runs -name 'setup-1-de_ps.log' | wc -l)" -eq 2 ]
	for f in .forge/runs/*/setup-*.log; do [ "$(stat -c %a "$f")" = 600 ]; done
}

@test "escape sequences and C1 controls in step names and commands never reach the terminal raw" {
	forge_test_repo
	# ESC [31m (colour), ESC ] 0 ; ... BEL (retitle), U+009B (CSI), DEL.
	printf '%s\n' '{"verify": {"steps": [{"name": "a\u001b[31mb\u009bc\u007f", "run": "true # \u001b]0;pwned\u0007 \u009b2J"}],' \
		'  "isolated": {"setup": [{"name": "s\u001b[1m", "run": "true \u001b[2J"}]}}}' >forge.json
	for mode in '' -v --isolated; do
		run forge-verify $mode
		assert_success
		assert_output --partial 'Verify: a [31mb c  (true # ^[]0;pwned^G M-^[2J) ok'
		run grep -c $'[\x01-\x08\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]' <<<"$output"
		assert_output 0
	done
	run forge-verify --isolated
	assert_output --partial 'Setup: s [1m (true ^[[2J) ok'
	run forge-verify --report
	assert_success
	assert_output --partial '  a [31mb c  (true # ^[]0;pwned^G M-^[2J) ok'
	run grep -c $'[\x01-\x08\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]' <<<"$output"
	assert_output 0
	# The record keeps the name and the command as they are.
	[ "$(tail -n 1 .forge/timeline.jsonl | jq -r '.steps[0].run')" = $'true # \e]0;pwned\a \u009b2J' ]
	# A missing command is named the same way.
	printf '%s\n' '{"verify": {"steps": [{"name": "n", "run": "exit 127 # \u001b[2J"}]}}' >forge.json
	run forge-verify
	assert_failure 69
	assert_output --partial "step 'n' (exit 127 # ^[[2J): not found"
	run grep -c $'\x1b' <<<"$output"
	assert_output 0
	# A timeline line with raw control characters (a hostile clone's): not
	# JSON, refused; --report never prints it.
	printf '{"ts":"x","event":"verify","run":"r\033]0;pwned\007","verdict":"PASS","steps":[]}\n' >>.forge/timeline.jsonl
	for mode in '' --json; do
		run forge-verify --report $mode
		assert_failure 65
		assert_output --partial 'timeline.jsonl: the last record is not a JSON object'
		run grep -c $'\x1b' <<<"$output"
		assert_output 0
	done
	# JSON, but not a record forge wrote: 65, not jq's own status.
	echo '{"event":"verify","steps":[{"ms":"x"}]}' >>.forge/timeline.jsonl
	run forge-verify --report
	assert_failure 65
	assert_output --partial 'timeline.jsonl: the last record is not a verify record forge can show'
}

# --- special files: a FIFO, a device or a folder where a file belongs --------

@test "a FIFO at each state file: 73 naming it within seconds, never a hang (also --breaker, --report, --reset)" {
	forge_test_repo
	forge-verify -q -- true
	# Which modes use which file (the others must not hang either).
	uses() {
		case "$1 $2" in
		'breaker '*--report* | 'breaker.lock '*--report*) return 1 ;;
		'timeline.jsonl --breaker' | 'timeline.jsonl --report --change c') return 1 ;;
		'changes/c.json '*--change*) return 0 ;;
		'changes/c.json '*) return 1 ;;
		esac
	}
	for f in breaker timeline.jsonl changes/c.json breaker.lock; do
		rm -rf .forge/"$f"
		mkfifo .forge/"$f"
		for args in '-- true' '--change c -- true' '--breaker' '--reset' '--report' '--report --change c'; do
			read -ra words <<<"$args"
			run timeout 30 forge-verify "${words[@]}"
			[ "$status" -ne 124 ] || fail "forge-verify $args blocked on a FIFO at $f (stopped by timeout 30)"
			refused_if_used "$f" "$args" ".forge/$f" "$f"
		done
		rm -f .forge/"$f"
	done
}

@test "a folder or a FIFO where .forge, runs/ or changes/ belongs: 73 naming it" {
	forge_test_repo
	echo not-a-folder >.forge
	run forge-verify -- true
	assert_failure 73
	assert_output --partial "$PWD/.forge is a regular file, not a folder"
	rm .forge
	mkdir .forge
	mkfifo .forge/runs
	run timeout 30 forge-verify -- true
	assert_failure 73
	assert_output --partial "$PWD/.forge/runs is a FIFO, not a folder"
	rm .forge/runs
	mkdir .forge/breaker
	run timeout 30 forge-verify -- true
	assert_failure 73
	assert_output --partial "$PWD/.forge/breaker is a folder, not a regular file"
}

@test "SIGTERM to a run whose breaker is a FIFO: it ends, its EXIT trap does not hang" {
	forge_test_repo
	forge-verify -q -- true
	forge-verify -q -- sleep 30 >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 1 100); do [ -n "$(find .forge/runs -name '*.log' -newer .forge/breaker)" ] && break; sleep 0.1; done
	rm .forge/breaker
	mkfifo .forge/breaker
	kill -TERM "$pid"
	SECONDS=0
	wait "$pid" || :
	[ "$SECONDS" -lt 25 ] # not the step's 30 s
}

# --- option-like values: data, never options -------------------------------

@test "a change ID '-rf' and a step named '-e': recorded as data, verdicts right" {
	forge_test_repo
	echo '{"verify": {"breaker": {"threshold": 100}}}' >forge.json
	run forge-verify -q --change -rf -- false
	assert_failure 1
	assert_output 'Verdict: FAIL'
	[ "$(forge-state get .forge/breaker streak)" = 1 ]
	jq -e '.change == "-rf" and .verdict == "FAIL"' .forge/changes/-rf.json
	run forge-verify --report --change -rf
	assert_success
	for name in -e -f --args --arg -rf --; do
		jq -n --arg n "$name" '{verify: {steps: [{name: $n, run: "true"}]}}' >forge.json
		run forge-verify -q
		assert_success
		[ "$(tail -n 1 .forge/timeline.jsonl | jq -r '.steps[0].name')" = "$name" ]
	done
	# A step whose command starts with '-' is a command, not a shell option.
	echo '{"verify": {"steps": [{"name": "x", "run": "-e"}]}}' >forge.json
	run forge-verify -q
	assert_failure
	[ "$(tail -n 1 .forge/timeline.jsonl | jq -r '.steps[0].run')" = -e ]
	# So is a setup step's.
	jq -n --arg m "$SCRATCH/setup-ran" '{verify: {isolated: {setup: [{name: "-e", run: "-x 2>/dev/null; touch \"\($m)\""}]}}}' >forge.json
	run forge-verify --isolated -q -- true
	assert_success
	[ -e "$SCRATCH/setup-ran" ]
}

@test "change IDs made of dots only are usage errors; nothing is created" {
	forge_test_repo
	for id in . .. ... ....; do
		run forge-verify --change "$id" -- true
		assert_failure 64
		assert_output --partial "invalid change ID '$id'"
	done
	[ ! -e .forge ]
	run forge-verify -q --change .a. -- true
	assert_success
	[ -f .forge/changes/.a..json ]
}

@test "a command line longer than one argument may be: verified and recorded whole" {
	forge_test_repo
	run forge-verify -q -- true $(seq 100000 130000)
	assert_success
	assert_output 'Verdict: PASS'
	[ "$(tail -n 1 .forge/timeline.jsonl | jq -r '.steps[0].run | length')" -gt 131072 ]
	run forge-verify -q --change long -- false $(seq 100000 130000)
	assert_failure 1
	jq -e '.verdict == "FAIL" and (.steps[0].run | endswith(" 130000"))' .forge/changes/long.json
}

# --- numbers: what validation accepts, forge-timeout runs -------------------

@test "time limits: forge-verify --timeout and forge-timeout accept exactly the same values" {
	forge_test_repo
	# Accepted or not (64): a tiny limit may well time out, that is a verdict.
	echo '{"verify": {"breaker": {"threshold": 1000}}}' >forge.json
	for secs in 5 0.5 .25 5. 0.001 .001 999999999 999999999.999 007 \
		0.0009 0.0009999999999 0.00000001 1000000000 99999999999 1e3 1e-7 -1 +1 '' . 0x10 5s inf; do
		forge-timeout "$secs" true 2>/dev/null && t=0 || t=$?
		run forge-verify -q --timeout "$secs" -- true
		[ "$t" -eq 0 ] || [ "$t" -eq 64 ] || [ "$t" -eq 124 ] || fail "forge-timeout '$secs': $t"
		if [ "$t" -eq 64 ]; then
			[ "$status" -eq 64 ] || fail "--timeout '$secs': forge-verify $status, forge-timeout refuses it"
		else
			[ "$status" -ne 64 ] || fail "--timeout '$secs': forge-verify refuses it, forge-timeout takes it"
		fi
	done
	# 0 is forge-timeout's "no limit", not a limit forge-verify takes.
	run forge-verify --timeout 0 -- true
	assert_failure 64
}

@test "out-of-range numbers in the configuration: 65 naming the key before anything runs, never a FAIL" {
	forge_test_repo
	for cfg in '{"verify": {"timeout": 1e10}}' '{"verify": {"timeout": 1e-7}}' \
		'{"verify": {"steps": [{"run": "touch ran", "timeout": 0.00000001}]}}' \
		'{"verify": {"breaker": {"threshold": 1e20}}}' '{"verify": {"breaker": {"threshold": 0}}}' \
		'{"verify": {"keepRuns": 0}}' '{"verify": {"keepRuns": 2.5}}' '{"verify": {"keepRuns": "20"}}'; do
		printf '%s\n' "$cfg" >forge.json
		run forge-verify -- touch ran
		assert_failure 65
		assert_output --partial 'forge.json: key verify.'
		assert_output --partial ': expected a'
		refute_output --partial 'Illegal number'
		[ ! -e ran ]
	done
	[ "$(forge-state get .forge/breaker streak 0)" = 0 ]
	run grep -c '"verdict":"FAIL"' .forge/timeline.jsonl
	assert_output 0
	echo '{"verify": {"timeout": 0.001, "breaker": {"threshold": 999999999}, "keepRuns": 1}}' >forge.json
	# (--timeout only so that a loaded machine cannot make 1 ms too short for true)
	run forge-verify -q --timeout 60 -- true
	assert_success
}

@test "a hostile breaker file (threshold 1e20, a 30-digit streak): a clear 65 or the default, never 'Illegal number'" {
	forge_test_repo
	forge-verify -q -- false || :
	printf 'streak=%s\nthreshold=3\n' 123456789012345678901234567890 >.forge/breaker
	run forge-verify -- false
	assert_failure 65
	assert_output --partial 'key streak: not a count'
	refute_output --partial 'Illegal number'
	printf 'streak=1\nthreshold=1e20\n' >.forge/breaker
	run forge-verify -- true
	assert_success
	refute_output --partial 'Illegal number'
}

# --- concurrency: 30 runs, clocks set back, live runs and retention --------

@test "30 concurrent 'forge-verify -- true': 30 PASS, 30 intact records" {
	forge_test_repo
	pids=''
	for i in $(seq 1 30); do
		forge-verify -q -- true >"$SCRATCH/out.$i" 2>&1 &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086 # a list of PIDs
	wait_each $pids
	[ "$(cat "$SCRATCH"/out.* | sort | uniq -c | sed 's/^ *//')" = '30 Verdict: PASS' ]
	[ "$(jq -r .verdict .forge/timeline.jsonl | sort | uniq -c | sed 's/^ *//')" = '30 PASS' ]
	# Each run's log survived its own run.
	for run in $(jq -r .run .forge/timeline.jsonl | tail -n 20); do
		[ -f ".forge/runs/$run/1-command.log" ]
	done
}

@test "20 run folders dated in the future (clock set back): later runs PASS, the breaker stays closed" {
	forge_test_repo
	forge-verify -q -- true
	for i in $(seq 10 29); do
		mkdir ".forge/runs/209901${i}T000000Z-$((4000000 + i))"
		echo "$((4000000 + i)) 1" >".forge/runs/209901${i}T000000Z-$((4000000 + i))/.owner"
	done
	for _ in 1 2 3; do
		run forge-verify -q -- true
		assert_success
	done
	run forge-verify --breaker
	assert_success
	[ -z "$(find .forge/runs -name '2099*')" ] # dead, unrecorded: pruned
}

@test "a run that is still going keeps its folder while 25 later runs finish" {
	forge_test_repo
	forge-verify -q -- sh -c 'echo started; while [ ! -e go ]; do sleep 0.1; done; echo finished' >"$SCRATCH/long.out" 2>&1 &
	long=$!
	for _ in $(seq 1 100); do [ -n "$(find .forge/runs -name '1-command.log' -size +0)" ] && break; sleep 0.1; done
	long_dir=$(dirname "$(find .forge/runs -name '1-command.log' -size +0)")
	for _ in $(seq 1 25); do forge-verify -q -- true >/dev/null; done
	[ -d "$long_dir" ]
	touch go
	wait "$long"
	[ "$(cat "$SCRATCH/long.out")" = 'Verdict: PASS' ]
	[ "$(cat "$long_dir/1-command.log")" = "$(printf 'started\nfinished')" ]
}

@test "runs a change record names are kept past verify.keepRuns; --report's logs exist" {
	forge_test_repo
	echo '{"verify": {"keepRuns": 3}}' >forge.json
	forge-verify -q --change keep-me -- true
	kept=$(jq -r .run .forge/changes/keep-me.json)
	for _ in $(seq 1 6); do forge-verify -q -- true >/dev/null; done
	[ -f ".forge/runs/$kept/1-command.log" ]
	[ "$(ls .forge/runs | wc -l)" -eq 4 ]
	# A newer record for the change: the old run is an ordinary old run now.
	forge-verify -q --change keep-me -- true
	[ ! -e ".forge/runs/$kept" ]
	[ -d ".forge/runs/$(jq -r .run .forge/changes/keep-me.json)" ]
}

@test "a commondir in the main git dir (a sandbox could have planted it): every forge-verify mode refuses (65) naming it; its filter never runs; a linked worktree's is believed" {
	make_repo "$SCRATCH/repo" && cd "$SCRATCH/repo"
	repo=$(pwd -P)
	printf '*.txt filter=pwn\n' >.gitattributes
	printf 'data\n' >a.txt
	git add .gitattributes a.txt
	git commit -q -m 'a filtered file'
	git worktree add -q "$SCRATCH/linked"
	mkdir .evil
	ln -s "$repo/.git/objects" .evil/objects
	ln -s "$repo/.git/refs" .evil/refs
	printf '[filter "pwn"]\n\tsmudge = "touch %s; cat"\n\tclean = "touch %s; cat"\n' "$SCRATCH/PWNED" "$SCRATCH/PWNED" >.evil/config
	printf '../.evil\n' >.git/commondir
	echo change >>a.txt
	for mode in '' --isolated '--isolated --warm'; do
		# shellcheck disable=SC2086 # the mode's words
		run forge-verify $mode -- true
		assert_failure 65
		assert_output --partial "$repo/.git/commondir"
	done
	[ ! -e "$SCRATCH/PWNED" ]
	[ ! -e "$repo/.forge/timeline.jsonl" ]
	# From the linked worktree: its own commondir is a linked worktree's, the main one's is refused.
	cd "$SCRATCH/linked"
	run forge-verify --isolated -- true
	assert_failure 65
	assert_output --partial "$repo/.git/commondir"
	rm "$repo/.git/commondir"
	run forge-verify --isolated -- true
	assert_success
	# A linked worktree's commondir naming another repository's git dir is refused too.
	make_repo "$SCRATCH/other"
	gitdir=$(git rev-parse --absolute-git-dir)
	printf '%s\n' "$SCRATCH/other/.git" >"$gitdir/commondir"
	run forge-verify -- true
	assert_failure 65
	assert_output --partial "$gitdir/commondir"
}
