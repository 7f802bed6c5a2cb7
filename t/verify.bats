#!/usr/bin/env bats
# forge-verify: steps (command line, config, detection), output, evidence,
# state on the real repository, exit codes (SPEC 3.1-3.3).
load test_helper

setup() { repo_setup; }
teardown() { forge_test_teardown; }

# stub TOOL: a stand-in for an external build tool that logs its argv.
stub() {
	mkdir -p "$SCRATCH/stubs"
	printf '#!/bin/sh\nprintf "%%s\\n" "%s $*" >>"%s"\n' "$1" "$SCRATCH/stub.log" >"$SCRATCH/stubs/$1"
	chmod +x "$SCRATCH/stubs/$1"
	PATH=$SCRATCH/stubs:$PATH
}

@test "-- COMMAND passes: verdict on stdout, progress on stderr, exit 0" {
	run --separate-stderr forge-verify -- true
	assert_success
	assert_output 'Verdict: PASS'
	[[ $stderr == *'Verify: command (true) ok '* ]]
}

@test "-- COMMAND runs argv directly, without a shell" {
	run forge-verify -- printf '%s|' 'a b' '$(touch pwned)' '*' "c;d"
	assert_success
	[ ! -e pwned ]
	run cat .forge/runs/*/1-command.log
	assert_output 'a b|$(touch pwned)|*|c;d|'
}

@test "a failing command: FAIL, exit 1, its last 40 lines on stderr, full log kept" {
	run --separate-stderr forge-verify -- sh -c 'seq 1 100; exit 3'
	assert_failure 1
	assert_output 'Verdict: FAIL'
	[[ $stderr == *"Verify: command (sh -c 'seq 1 100; exit 3') FAIL exit 3 "* ]]
	[[ $stderr == *$'\n| 61\n'* ]]
	[[ $stderr != *$'\n| 60\n'* ]]
	[ "$(wc -l <.forge/runs/*/1-command.log)" -eq 100 ]
	run_id=$(last_record | jq -r .run)
	[[ $stderr == *$'\n| 100\nlog: .forge/runs/'"$run_id"'/1-command.log' ]]
	[ "$(last_record | jq -r '.steps[0].log')" = ".forge/runs/$run_id/1-command.log" ]
}

# The output of a step that tries to fake a PASS and hide what follows.
INJECT='printf "Verdict: PASS\n\033[8mhidden\r\302\233x\177\n"'

@test "the failure tail is shown, never obeyed: control characters escaped, each line after '| ', the log raw" {
	run --separate-stderr forge-verify -- sh -c "$INJECT; exit 1"
	assert_failure 1
	assert_output 'Verdict: FAIL'
	[[ $stderr != *$'\e'* ]]
	[[ $stderr != *$'\r'* ]]
	[[ $stderr != *$'\302\233'* ]]
	[[ $stderr == *$'\n| Verdict: PASS\n| ^[[8mhidden^MM-^[x^?\nlog: .forge/runs/'* ]]
	run grep -c '^Verdict:' <<<"$stderr"
	assert_output 0
	grep -q $'^\e\\[8mhidden\r\302\233x\177$' .forge/runs/*/1-command.log
}

@test "on a terminal too, the failure tail's escape sequences are shown, not obeyed" {
	run script -qfec "forge-verify -- sh -c '$INJECT; exit 1'" /dev/null
	assert_failure 1
	[[ $output != *$'\e[8m'* ]]
	[[ $output == *'| ^[[8mhidden^MM-^[x^?'* ]]
	[[ $output == *$'\n| Verdict: PASS\r\n'* ]]
}

@test "-v: the live stream is shown, never obeyed, on a terminal and off one; the log raw" {
	run --separate-stderr forge-verify -v -- sh -c "$INJECT"
	assert_success
	[[ $stderr != *$'\e'* ]]
	[[ $stderr == *$'\n| Verdict: PASS\n| ^[[8mhidden^MM-^[x^?\n'* ]]
	grep -q $'^\e\\[8mhidden\r\302\233x\177$' .forge/runs/*/1-command.log
	run script -qfec "forge-verify -v -- sh -c '$INJECT'" /dev/null
	assert_success
	[[ $output != *$'\e[8m'* ]]
	[[ $output == *'| ^[[8mhidden^MM-^[x^?'* ]]
}

@test "names and commands in Verify: lines, --report and error messages are shown escaped, on one line" {
	cat >forge.json <<'JSON'
{"verify": {"steps": [{"name": "t", "run": "true \u001b[8m\necho Verdict: PASS"}, {"name": "u", "run": "exit 1 \u009b"}]}}
JSON
	run --separate-stderr forge-verify
	assert_failure 1
	[[ $stderr != *$'\e'* ]]
	[[ $stderr != *$'\302\233'* ]]
	[[ $stderr == *'Verify: t (true ^[[8m^Jecho Verdict: PASS) ok '* ]]
	[[ $stderr == *'Verify: u (exit 1 M-^[) FAIL exit 1 '* ]]
	run grep -c '^Verdict:' <<<"$stderr"
	assert_output 0
	run forge-verify --report
	assert_success
	[[ $output != *$'\e'* ]]
	[[ $output == *'  t (true ^[[8m^Jecho Verdict: PASS) ok '* ]]
	run --separate-stderr forge-verify -- "$(printf 'no-such\033[8m')"
	assert_failure 69
	[[ $stderr != *$'\e'* ]]
	[[ $stderr == *"error: step 'command' ('no-such^[[8m'): not found"* ]]
}

@test "log names: position and the name reduced to [A-Za-z0-9._-], never a path; the record names each" {
	cat >forge.json <<'JSON'
{"verify": {"steps": [
  {"name": "../../up", "run": "echo one"},
  {"name": "a/b c\u00e9", "run": "echo two; exit 1"}]}}
JSON
	run --separate-stderr forge-verify
	assert_failure 1
	run_id=$(last_record | jq -r .run)
	run last_record
	[ "$(jq -r '.steps[0].log' <<<"$output")" = ".forge/runs/$run_id/1-.._.._up.log" ]
	[ "$(jq -r '.steps[1].log' <<<"$output")" = ".forge/runs/$run_id/2-a_b_c_.log" ]
	[ "$(cat ".forge/runs/$run_id/1-.._.._up.log")" = one ]
	[ "$(cat ".forge/runs/$run_id/2-a_b_c_.log")" = two ]
	[ ! -e up ]
	[ ! -e .forge/up ]
	[ "$(ls ".forge/runs/$run_id" | wc -l)" -eq 2 ]
}

@test "a step that is not found (127) or not executable (126): ERROR 69 naming the step, streak untouched" {
	forge-verify -- false || :
	run --separate-stderr forge-verify -- no-such-tool-forge
	assert_failure 69
	assert_output 'Verdict: ERROR'
	[[ $stderr == *"step 'command' (no-such-tool-forge): not found (exit 127)"* ]]
	[[ $stderr == *'Verify: command (no-such-tool-forge) ERROR not found '* ]]
	[ "$(last_record | jq -r '.verdict, .streak, .steps[0].reason, .steps[0].exit')" = "$(printf 'ERROR\n1\nnot found\n127')" ]
	printf 'echo hi\n' >notexec
	chmod 644 notexec
	echo '{"verify": {"steps": [{"name": "ok", "run": "true"}, {"name": "unit", "run": "./notexec"}, {"name": "never", "run": "touch never"}]}}' >forge.json
	run --separate-stderr forge-verify
	assert_failure 69
	[[ $stderr == *"step 'unit' (./notexec): not executable (exit 126)"* ]]
	[ ! -e never ]
	[ "$(last_record | jq -r '.verdict, .streak, .steps[1].reason')" = "$(printf 'ERROR\n1\nnot executable')" ]
	[ "$(forge-state get .forge/breaker streak)" = 1 ]
}

@test "a tool missing inside a step's shell (sh exits 127) is an ERROR too, with the shell's message" {
	echo '{"verify": {"steps": [{"name": "test", "run": "no-such-runner-forge --all"}]}}' >forge.json
	run --separate-stderr forge-verify
	assert_failure 69
	[[ $stderr == *'no-such-runner-forge'*'not found'* ]]
	[[ $stderr == *'log: .forge/runs/'*'/1-test.log'* ]]
}

@test "a step that exits 124 by itself is exit 124, not a timeout" {
	run --separate-stderr forge-verify --timeout 30 -- sh -c 'exit 124'
	assert_failure 1
	[[ $stderr == *'FAIL exit 124 '* ]]
	[ "$(last_record | jq -r '.steps[0].reason, .steps[0].exit')" = "$(printf 'exit\n124')" ]
	run --separate-stderr forge-verify --timeout 0.5 -- sleep 30
	assert_failure 1
	[[ $stderr == *'FAIL timeout '* ]]
	[ "$(last_record | jq -r '.steps[0].reason')" = timeout ]
}

@test "what a step leaves running in its process group is terminated when the step ends" {
	run forge-verify -- sh -c 'sleep 287 >/dev/null 2>&1 & echo $! >"$1"' sh "$SCRATCH/left"
	assert_success
	left=$(cat "$SCRATCH/left")
	for _ in $(seq 50); do kill -0 "$left" 2>/dev/null || break; sleep 0.1; done
	run ! kill -0 "$left"
}

@test "a step starts with SIGINT and SIGQUIT at their defaults, although forge runs it as a background job" {
	# From a caller with both at their defaults (a test runner may ignore QUIT).
	run python3 -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGQUIT): signal.signal(s, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' forge-verify -v -- grep '^SigIgn:' /proc/self/status
	assert_success
	line=$(printf '%s\n' "$output" | grep '^| SigIgn:')
	ignored=$((0x${line#'| SigIgn:'?}))
	# Bits 1 and 2: INT (2) and QUIT (3).
	[ $((ignored & 0x6)) -eq 0 ]
}

@test "-v prints each step's line before its output, then the result" {
	echo '{"verify": {"steps": [{"name": "one", "run": "echo out-one"}, {"name": "two", "run": "echo out-two"}]}}' >forge.json
	run --separate-stderr forge-verify -v
	assert_success
	[ "${stderr_lines[0]}" = 'Verify: one (echo out-one)' ]
	[ "${stderr_lines[1]}" = '| out-one' ]
	[[ ${stderr_lines[2]} == 'Verify: one (echo out-one) ok '* ]]
	[ "${stderr_lines[3]}" = 'Verify: two (echo out-two)' ]
	[ "${stderr_lines[4]}" = '| out-two' ]
}

@test "-v streams the output as it is produced, not when the step ends" {
	forge-verify -v -- sh -c 'echo first-line; while [ ! -e "$1" ]; do sleep 0.1; done; echo second-line' sh "$SCRATCH/go" \
		2>"$SCRATCH/stream" &
	pid=$!
	for _ in $(seq 100); do grep -qx '| first-line' "$SCRATCH/stream" && break; sleep 0.1; done
	run grep -cx -e '| first-line' -e '| second-line' "$SCRATCH/stream"
	touch "$SCRATCH/go"
	wait "$pid"
	assert_output 1
	grep -qx '| second-line' "$SCRATCH/stream"
}

@test "-v honours the timeout when a step leaves a process holding its output open" {
	start=$(date +%s)
	run --separate-stderr forge-verify -v --timeout 2 -- sh -c 'sleep 20 & echo bg'
	assert_success
	[ $(($(date +%s) - start)) -lt 10 ]
	# A process that escaped the group (setsid) still holds the output.
	start=$(date +%s)
	run --separate-stderr forge-verify -v --timeout 2 -- sh -c 'setsid sh -c "echo \$\$ >\"\$1\"; exec sleep 20" sh "$1" & while [ ! -s "$1" ]; do sleep 0.05; done; echo started' sh "$SCRATCH/daemon"
	elapsed=$(($(date +%s) - start))
	kill "$(cat "$SCRATCH/daemon")" 2>/dev/null || :
	assert_success
	[[ $stderr == *started* ]]
	[ "$elapsed" -lt 10 ]
	grep -q started .forge/runs/*/1-command.log
}

@test "-q: no warnings, no Breaker line, no failure tail, no log line" {
	echo '{"verify": {"breaker": {"threshold": 1}}, "unknownkey": 1}' >forge.json
	run --separate-stderr forge-verify -q -- sh -c 'echo tail-line; exit 1'
	assert_failure 2
	assert_output 'Verdict: FAIL'
	[ -z "$stderr" ]
	run --separate-stderr forge-verify -- sh -c 'echo tail-line; exit 1'
	assert_failure 2
	[[ $stderr == *'warning: '*unknownkey* ]]
	[[ $stderr == *'Breaker: OPEN (2 consecutive failures, threshold 1)'* ]]
	[[ $stderr == *tail-line* ]]
}

@test "a status line with the step and its elapsed time on a terminal, erased afterwards" {
	run script -qfec "forge-verify -- sh -c 'sleep 2.5'" /dev/null
	assert_success
	[[ $output == *$'\r\e[KVerify: command (sh -c '"'"'sleep 2.5'"'"') 0s'* ]]
	[[ $output == *$'\r\e[KVerify: command (sh -c '"'"'sleep 2.5'"'"') 2s'* ]]
	# Erased before the step's own line.
	[[ $output == *$'2s\r\e[KVerify: command (sh -c '"'"'sleep 2.5'"'"') ok 2.'* ]]
}

@test "off a terminal, and with -q or -v, no status line" {
	run --separate-stderr forge-verify -- sh -c 'sleep 1.5'
	assert_success
	[[ $stderr != *$'\r'* ]]
	run script -qfec "forge-verify -q -- sh -c 'sleep 1.5'" /dev/null
	assert_success
	[[ $output != *$'\r\e[K'* ]]
	run script -qfec "forge-verify -v -- sh -c 'sleep 1.5'" /dev/null
	assert_success
	[[ $output != *$'\e[K'* ]]
}

@test "-q prints only the verdict; -v streams step output" {
	run --separate-stderr forge-verify -q -- sh -c 'echo hidden; exit 1'
	assert_failure 1
	assert_output 'Verdict: FAIL'
	[ -z "$stderr" ]
	run --separate-stderr forge-verify -v -- sh -c 'echo streamed; exit 0'
	assert_success
	[[ $stderr == *streamed* ]]
	grep -q streamed .forge/runs/*/1-command.log
}

@test "steps get FORGE_VERIFY, FORGE_VERIFY_ISOLATED, FORGE_VERIFY_SOURCE, FORGE_CHANGE, run in the root" {
	mkdir sub && cd sub
	run forge-verify --change c-1 -- sh -c 'echo "$FORGE_VERIFY/$FORGE_VERIFY_ISOLATED/$FORGE_VERIFY_SOURCE/$FORGE_CHANGE/$(pwd)"'
	assert_success
	run cat "$REPO"/.forge/runs/*/1-command.log
	assert_output "1/0/$REPO/c-1/$REPO"
}

@test "a step's stdin is /dev/null" {
	run forge-verify -- sh -c 'test "$(cat)" = ""'
	assert_success
}

@test "verify.steps from forge.json run with sh -c, in order, first failure ends the run" {
	cat >forge.json <<'JSON'
{"verify": {"steps": [
  {"name": "one", "run": "echo 1 >>order"},
  {"name": "two words", "run": "echo 2 >>order; exit 4"},
  {"name": "three", "run": "echo 3 >>order"}]}}
JSON
	printf 'all:\n\ttrue\n' >Makefile
	run --separate-stderr forge-verify
	assert_failure 1
	[ "$(cat order)" = "$(printf '1\n2')" ]
	run step_runs
	assert_output "$(printf 'echo 1 >>order\necho 2 >>order; exit 4')"
	[ -f .forge/runs/*/2-two_words.log ]
}

@test "a config step without run is a config error naming the key" {
	echo '{"verify": {"steps": [{"name": "x"}]}}' >forge.json
	run forge-verify
	assert_failure 65
	assert_output --partial 'verify.steps[0].run'
}

@test "detect: Makefile with check: -> make check only, the default target is no separate step" {
	printf 'all:\n\t@echo default >>ran\ncheck:\n\t@echo check >>ran\n' >Makefile
	run forge-verify
	assert_success
	run cat ran
	assert_output check
	run step_runs
	assert_output 'make check'
	[ "$(last_record | jq -r '.steps[0].name')" = test ]
}

@test "detect: a makefile with test: and check: -> make test (check is often lint)" {
	printf 'all:\n\t@false\ncheck: lint\nlint:\n\t@false\nunit test: all2\nall2:\n\t@true\nCHECK := x\n' >makefile
	run forge-verify
	assert_success
	run step_runs
	assert_output 'make test'
}

@test "detect: GNUmakefile is the one make reads, before makefile and Makefile" {
	printf 'check:\n\t@true\n' >GNUmakefile
	printf 'test:\n\t@false\n' >Makefile
	run forge-verify
	assert_success
	run step_runs
	assert_output 'make check'
}

@test "detect: a makefile without test/check does not match: the next rule is tried" {
	stub npm
	printf 'check := 1\nall:\n\t@false\n' >Makefile
	echo '{"scripts": {"test": "y"}}' >package.json
	run forge-verify
	assert_success
	run step_runs
	assert_output 'npm test'
}

@test "detect: a makefile without test/check and nothing else: no tests found (make is no last resort)" {
	printf 'check := 1\nall:\n\t@true\n' >GNUmakefile
	run forge-verify
	assert_failure 64
	assert_output --partial 'no tests found'
}

# autoconf_project_runs: a configure.ac project (autoreconf stubbed; its
# configure writes a Makefile whose check target leaves "checked"): forge-verify
# detects autoreconf, configure, make, then the generated make check, and passes.
autoconf_project_runs() {
	stub autoreconf
	touch configure.ac
	printf '#!/bin/sh\nprintf "all:\\n\\t@true\\ncheck:\\n\\t@echo ok >checked\\n" >Makefile\n' >configure
	chmod +x configure
	run forge-verify
	assert_success
	[ -f checked ]
	run step_runs
	assert_output $'autoreconf -fi && ./configure && make\nmake check'
}

@test "detect: configure.ac beside a makefile without test/check -> autoreconf, configure, make; the generated check" {
	printf 'all:\n\t@true\n' >Makefile
	autoconf_project_runs
}

@test "detect: package.json scripts -> npm run build, npm test" {
	stub npm
	echo '{"scripts": {"build": "x", "test": "y"}}' >package.json
	run forge-verify
	assert_success
	run step_runs
	assert_output "$(printf 'npm run build\nnpm test')"
	run cat "$SCRATCH/stub.log"
	assert_output "$(printf 'npm run build\nnpm test')"
}

@test "detect: package.json with only a test script -> npm test" {
	stub npm
	echo '{"scripts": {"test": "y"}}' >package.json
	run forge-verify
	assert_success
	run step_runs
	assert_output 'npm test'
}

@test "detect: an invalid package.json is a data error naming it" {
	echo '{"scripts": ' >package.json
	run forge-verify
	assert_failure 65
	assert_output --partial package.json
}

@test "detect: Cargo.toml -> cargo build, cargo test" {
	stub cargo
	touch Cargo.toml
	run forge-verify
	assert_success
	run step_runs
	assert_output "$(printf 'cargo build\ncargo test')"
}

@test "detect: go.mod -> go build ./..., go test ./..." {
	stub go
	touch go.mod
	run forge-verify
	assert_success
	run step_runs
	assert_output "$(printf 'go build ./...\ngo test ./...')"
}

@test "detect: pyproject.toml, setup.py, setup.cfg, pytest.ini, tox.ini -> pytest when it is on PATH" {
	stub pytest
	for f in pyproject.toml setup.py setup.cfg pytest.ini tox.ini; do
		rm -f pyproject.toml setup.py setup.cfg pytest.ini tox.ini
		touch "$f"
		run forge-verify
		assert_success
		run step_runs
		assert_output pytest
	done
	run cat "$SCRATCH/stub.log"
	assert_line --index 4 'pytest '
}

@test "detect: a Python project without pytest on PATH -> python3 -m pytest" {
	touch setup.cfg
	# The tools detection uses, but no pytest anywhere on PATH.
	mkdir -p "$SCRATCH/tools"
	for tool in git jq grep sed tr; do ln -s "$(command -v "$tool")" "$SCRATCH/tools/$tool"; done
	run env PATH="$SCRATCH/tools" /bin/sh -c '. "$FORGE_LIBDIR/forge.sh" && forge_steps_detect . && printf "%s\n" "$forge_steps"'
	assert_success
	assert_output '[{"name":"test","run":"python3 -m pytest"}]'
}

@test "detect: configure.ac without a makefile -> autoreconf, configure, make; make check" {
	autoconf_project_runs
}

@test "detect: a Makefile with a test target wins over package.json" {
	printf 'test:\n\t@true\n' >Makefile
	echo '{"scripts": {"test": "y"}}' >package.json
	run forge-verify
	assert_success
	run step_runs
	assert_output 'make test'
}

@test "config steps override detection" {
	printf 'all:\n\t@false\n' >Makefile
	echo '{"verify": {"steps": [{"name": "only", "run": "true"}]}}' >forge.json
	run forge-verify
	assert_success
	run step_runs
	assert_output true
}

@test "nothing to run: exit 64 with the hint, recorded as ERROR" {
	run forge-verify
	assert_failure 64
	assert_output --partial 'no tests found: looked at'
	assert_output --partial 'Add verify.steps to forge.json or pass -- COMMAND'
	[ "$(last_record | jq -r .verdict)" = ERROR ]
}

@test "a step over its timeout fails with reason timeout" {
	run --separate-stderr forge-verify --timeout 1 -- sh -c 'sleep 30'
	assert_failure 1
	[[ $stderr == *'FAIL timeout'* ]]
	[ "$(last_record | jq -r '.steps[0].reason')" = timeout ]
	[ "$(last_record | jq -r '.steps[0].exit')" = 124 ]
}

@test "per-step timeout from config; a step ignoring TERM is killed" {
	echo '{"verify": {"steps": [{"name": "hang", "run": "trap \"\" TERM; sleep 60", "timeout": 1}]}}' >forge.json
	start=$(date +%s)
	run forge-verify
	assert_failure 1
	[ "$(last_record | jq -r '.steps[0].reason')" = timeout ]
	[ $(($(date +%s) - start)) -lt 30 ]
}

@test "verify.timeout from config bounds -- COMMAND" {
	echo '{"verify": {"timeout": 1}}' >forge.json
	run forge-verify -- sleep 30
	assert_failure 1
	[ "$(last_record | jq -r '.steps[0].reason')" = timeout ]
}

@test "the timeline line has every field of SPEC 3.3" {
	run forge-verify -- true
	assert_success
	run last_record
	echo "$output" | jq -e '
		(.ts | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"))
		and .event == "verify" and (.run | type) == "string" and .verdict == "PASS"
		and .isolated == false and .change == null and (.head | test("^[0-9a-f]{40}$"))
		and .tree == null and .streak == 0 and .breaker == "closed"
		and (.steps | length) == 1 and .steps[0].name == "command" and .steps[0].run == "true"
		and .steps[0].exit == 0 and (.steps[0].ms | type) == "number" and .steps[0].reason == null'
}

@test "head is null before the first commit" {
	cd "$SCRATCH" && git init -q fresh && cd fresh
	run forge-verify -- true
	assert_success
	[ "$(last_record | jq -r .head)" = null ]
}

@test ".forge/ is excluded through info/exclude, once" {
	forge-verify -- true
	forge-verify -- true
	[ "$(grep -cxF '/.forge/' .git/info/exclude)" -eq 1 ]
	[ -z "$(git status --porcelain)" ]
}

@test "a linked worktree keeps its own .forge and shares the exclude" {
	git worktree add -q "$SCRATCH/wt"
	cd "$SCRATCH/wt"
	forge-verify -- true
	[ -f "$SCRATCH/wt/.forge/timeline.jsonl" ]
	[ ! -e "$REPO/.forge" ]
	grep -qxF '/.forge/' "$REPO/.git/info/exclude"
	[ -z "$(git status --porcelain)" ]
}

@test "only the last 20 finished runs' logs are kept, verify.keepRuns changes that" {
	for i in $(seq 1 22); do forge-verify -q -- true >/dev/null; done
	[ "$(find .forge/runs -mindepth 1 -maxdepth 1 | wc -l)" -eq 20 ]
	# The 20 kept are the last 20 the timeline records.
	[ "$(jq -r .run .forge/timeline.jsonl | tail -n 20 | sort)" = "$(ls .forge/runs | sort)" ]
	echo '{"verify": {"keepRuns": 3}}' >forge.json
	forge-verify -q -- true
	[ "$(ls .forge/runs | sort)" = "$(jq -r .run .forge/timeline.jsonl | tail -n 3 | sort)" ]
}

@test "--change writes changes/ID.json; --report shows it; --json prints the record" {
	run forge-verify --change feat-1 -- sh -c 'exit 5'
	assert_failure 1
	jq -e '.change == "feat-1" and .verdict == "FAIL" and .steps[0].exit == 5' .forge/changes/feat-1.json
	forge-verify --change feat-2 -- true
	run forge-verify --report --change feat-1 --json
	assert_success
	echo "$output" | jq -e '.change == "feat-1"'
	run forge-verify --report --change feat-1
	assert_success
	assert_output --partial ': FAIL'
	assert_output --partial 'FAIL exit 5'
	run forge-verify --report
	assert_success
	assert_output --partial ': PASS'
	run forge-verify --report --change nope
	assert_failure 1
}

@test "--json prints one JSON document on stdout instead of the verdict" {
	run --separate-stderr forge-verify --json -- true
	assert_success
	echo "$output" | jq -e '.verdict == "PASS" and .event == "verify"'
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
}

@test "usage errors exit 64: unknown option, bad --change, bad --timeout, missing argument" {
	run forge-verify --bogus
	assert_failure 64
	assert_output --partial "unknown option '--bogus'"
	for id in 'a/b' 'a b' '' "$(printf 'x%.0s' $(seq 1 65))" '..x?'; do
		run forge-verify --change "$id" -- true
		assert_failure 64
	done
	run forge-verify --timeout abc -- true
	assert_failure 64
	run forge-verify --timeout 0 -- true
	assert_failure 64
	run forge-verify --change
	assert_failure 64
	run forge-verify --report -- true
	assert_failure 64
	[ ! -e .forge/timeline.jsonl ]
}

@test "two modes at once are a usage error (64), in either order, nothing done" {
	forge-verify -- false || :
	for pair in '--report --reset' '--reset --report' '--prune --breaker' '--breaker --prune' '--report --prune' '--breaker --reset'; do
		# shellcheck disable=SC2086 # two options
		run --separate-stderr forge-verify $pair
		assert_failure 64
		[[ $stderr == *'cannot be used together'* ]]
	done
	[ "$(forge-state get .forge/breaker streak)" = 1 ]
	run forge-verify --reset --reset
	assert_success
}

@test "--help and --version" {
	run --separate-stderr forge-verify --help
	assert_success
	assert_output --partial 'Usage: forge-verify'
	[ -z "$stderr" ]
	run forge-verify --version
	assert_success
	assert_output --regexp '^forge-verify [0-9]+\.[0-9]+'
}

@test "not a git repository: exit 69, nothing created" {
	mkdir "$SCRATCH/plain" && cd "$SCRATCH/plain"
	run forge-verify -- true
	assert_failure 69
	assert_output --partial 'not a git repository'
	[ ! -e .forge ]
}

@test "a missing jq or git: exit 69 naming it" {
	mkdir "$SCRATCH/bin"
	for t in sh git dirname cat; do ln -s "$(command -v "$t")" "$SCRATCH/bin/$t"; done
	PATH="$SCRATCH/bin" run "$abs_top_builddir/bin/forge-verify" -- true
	assert_failure 69
	assert_output --partial "'jq'"
}

@test "an unwritable .forge: exit 73" {
	printf 'not a dir' >.forge
	run forge-verify -- true
	assert_failure 73
	assert_output --partial '.forge'
}

@test "a lock held too long on the state: exit 75, and the streak is untouched" {
	forge-verify -- true
	flock -o .forge/breaker.lock sleep 30 &
	holder=$!
	for _ in $(seq 1 50); do flock -n .forge/breaker.lock true || break; sleep 0.1; done
	FORGE_LOCK_WAIT=1 run forge-verify -- false
	kill "$holder"
	assert_failure 75
	assert_output --partial 'breaker'
	[ "$(forge-state get .forge/breaker streak)" = 0 ]
}

@test "SIGTERM, SIGINT, SIGHUP mid-step: the step gets it, exit 128+n, ERROR recorded, streak untouched" {
	forge-verify -- sh -c 'exit 1' || true
	for sig in TERM INT HUP; do
		rm -f started got
		# A background job starts with SIGINT ignored; perl restores it, as in
		# a terminal's foreground job.
		perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' -- \
			forge-verify -- sh -c 'trap "echo got >got; exit 9" INT TERM HUP; touch started; sleep 60 & wait' &
		pid=$!
		for _ in $(seq 1 100); do [ -e started ] && break; sleep 0.1; done
		kill -s "$sig" "$pid"
		wait "$pid" && rc=0 || rc=$?
		case $sig in TERM) [ "$rc" -eq 143 ] ;; INT) [ "$rc" -eq 130 ] ;; HUP) [ "$rc" -eq 129 ] ;; esac
		[ -e got ]
		[ "$(last_record | jq -r .verdict)" = ERROR ]
		[ "$(last_record | jq -r .streak)" = 1 ]
		[ "$(last_record | jq -r '.steps | length')" = 1 ]
		[ "$(last_record | jq -r '.steps[0].reason')" = interrupted ]
		[ "$(last_record | jq -r '.steps[0].name')" = command ]
	done
}

@test "started with SIGINT ignored (a script's background job), an interrupted step is ERROR interrupted, not FAIL 130" {
	forge-verify -- sh -c 'exit 1' || true
	rm -f "$SCRATCH/step"
	# sh starts its background job with SIGINT ignored: forge-verify cannot
	# trap it, but the step still gets it (from the group, here directly).
	sh -c 'forge-verify -- sh -c "echo \$\$ >\"\$1\"; exec sleep 60" sh "$1" & wait $!' sh "$SCRATCH/step" &
	pid=$!
	for _ in $(seq 1 100); do [ -s "$SCRATCH/step" ] && break; sleep 0.1; done
	kill -INT "$(cat "$SCRATCH/step")"
	wait "$pid" && rc=0 || rc=$?
	[ "$rc" -eq 130 ]
	[ "$(last_record | jq -r .verdict)" = ERROR ]
	[ "$(last_record | jq -r '.steps[0].reason')" = interrupted ]
	[ "$(last_record | jq -r .streak)" = 1 ]
	[ "$(forge-state get .forge/breaker streak)" = 1 ]
}

@test "a step that exits 130 by itself, with SIGINT not ignored, is an ordinary FAIL" {
	run perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' -- forge-verify -- sh -c 'exit 130'
	assert_failure 1
	[ "$(last_record | jq -r '.steps[0].reason, .steps[0].exit')" = "$(printf 'exit\n130')" ]
}

@test "run from a symlink into a subdirectory: the repository is found" {
	mkdir -p sub/dir
	ln -s "$REPO/sub/dir" "$SCRATCH/link"
	cd "$SCRATCH/link"
	run forge-verify -- true
	assert_success
	[ -f "$REPO/.forge/timeline.jsonl" ]
}

# --- what a run costs (issue 23) ---------------------------------------------

# execs_of ARG...: runs forge-verify ARG... (under FORGE_TEST_SHELL when set)
# with every execve traced; sets EXECS to the number of execve calls (failed
# ones too: a PATH searched by exec costs one per element) and PROGS to the
# programs that ran, one per line.
execs_of() {
	# shellcheck disable=SC2086 # FORGE_TEST_SHELL is words ("busybox sh")
	# (LeakSanitizer cannot run under ptrace: in CI's sanitizer pass a traced
	# helper would fail at exit. Leaks are checked by every other test there.)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -e trace=execve -o "$SCRATCH/execs" \
		${FORGE_TEST_SHELL:-} "$abs_top_builddir/bin/forge-verify" "$@" >/dev/null 2>&1
	EXECS=$(grep -c 'execve(' "$SCRATCH/execs")
	PROGS=$(grep 'execve(' "$SCRATCH/execs" | grep -v ' = -1 ' | sed -n 's/.*execve("\([^"]*\)".*/\1/p' | sed 's|.*/||')
}

@test "forge-verify -- true runs at most 12 programs: no jq, one git, no date, no PATH search by exec" {
	need_strace
	# The first run, and one with finished runs for retention to look at.
	# (12 at the time of writing: forge-verify, git, mkdir, forge-timeout,
	# true, forge-state five times, and grep and tail for retention; the
	# first run makes .forge/ too.)
	bound=13
	for round in first later; do
		execs_of -- true
		echo "$round: $EXECS execve: $PROGS"
		[ "$EXECS" -le "$bound" ]
		bound=12
		run grep -cx jq <<<"$PROGS"
		assert_output 0
		[ "$(grep -cx git <<<"$PROGS")" -eq 1 ]
		run grep -cx date <<<"$PROGS"
		assert_output 0
		# Every exec found its program at once.
		run grep -c ' = -1 ' "$SCRATCH/execs"
		assert_output 0
		forge-verify -q -- true
	done
	# -q changes nothing of that; the run was recorded each time.
	execs_of -q -- true
	[ "$EXECS" -le 12 ]
	[ "$(grep -c '"event":"verify"' .forge/timeline.jsonl)" -eq 5 ]
}

@test "a run of configured steps starts jq once for the configuration and once per phase, not per step" {
	need_strace
	echo '{"verify": {"steps": [{"name": "a", "run": "true"}, {"name": "b", "run": "true"}, {"name": "c", "run": "true"}]}}' >forge.json
	execs_of
	echo "$EXECS execve: $PROGS"
	# The configuration, its steps and their plan (the record is written by the shell).
	[ "$(grep -cx jq <<<"$PROGS")" -le 3 ]
	last_record | jq -e '[.steps[].name] == ["a", "b", "c"] and .verdict == "PASS"'
}

@test "a warm run starts at most 30 programs: it lists only the names detection needs, and writes the copy's config without git config" {
	need_strace
	for i in 1 2 3; do mkdir -p "d$i" && echo "$i" >"d$i/f.txt"; done
	git add . && git commit -qm files
	forge-verify -q --isolated --warm -- true
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -s 256 -e trace=execve -o "$SCRATCH/execs" \
		${FORGE_TEST_SHELL:-} "$abs_top_builddir/bin/forge-verify" -q --isolated --warm -- true
	# Every ls-files that lists untracked files names what it looks for,
	# except the one that copies them.
	run grep -c '"ls-files", "-z", "--cached", "--others", "--exclude-standard"\]' "$SCRATCH/execs"
	assert_output 0
	run grep -c '"config", "-f"' "$SCRATCH/execs"
	assert_output 0
	# And the whole of it: 28 programs at the time of writing (44 before the
	# slot's .git was kept and its index reused, issue 23).
	run grep -v ' = -1 ' "$SCRATCH/execs"
	echo "$(grep -c 'execve(' <<<"$output") programs"
	[ "$(grep -c 'execve(' <<<"$output")" -le 30 ]
}

@test "a cold copy's snapshot tree reads none of the files just checked out (no racy-git rehash)" {
	need_strace
	mkdir -p src
	for i in $(seq 1 200); do echo "file $i" >"src/f$i.txt"; done
	git add . && git commit -qm files
	echo changed >>src/f1.txt
	echo new >src/new.txt
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -s 256 -e trace=execve,openat -o "$SCRATCH/opens" \
		${FORGE_TEST_SHELL:-} "$abs_top_builddir/bin/forge-verify" -q --isolated -- true
	# Reads of committed files by the git processes working in the copy (the
	# source's own are read by its diff): the changed one by git apply, at most.
	run awk '/execve\(/ { incopy[$1] = ($0 ~ /"-C", "[^"]*forge-verify\./) }
		/openat\(.*"src\/f[0-9]+\.txt", O_RDONLY/ && incopy[$1] { n++ }
		END { print n + 0 }' "$SCRATCH/opens"
	echo "$output reads"
	[ "$output" -le 2 ]
}

# --- records a user can paste (issue 18, item 7) ---------------------------------

@test "a -- step is recorded with its exact argv and shown and recorded shell-quoted, so pasting it runs the same" {
	run --separate-stderr forge-verify -- sh -c './configure && make test'
	[[ $stderr == *"Verify: command (sh -c './configure && make test') "* ]]
	run last_record
	echo "$output" | jq -e '.steps[0].argv == ["sh", "-c", "./configure && make test"]'
	echo "$output" | jq -e '.steps[0].run == "sh -c '"'"'./configure && make test'"'"'"'
	echo "$output" | jq -e '.tested == null'
}

@test "the quoted run of a -- step gives back every argument: quotes, empty ones, newlines, dashes, globs" {
	local args=(printf '%s|' "it's" '' $'two\nlines' -e '*' '$HOME' 'a\b' ' lead' "'" '"')
	forge-verify -q -- "${args[@]}"
	# (jq would take an argument -e for its own option: they go on stdin.)
	{ printf '%s\0' "${args[@]}" && printf .; } |
		jq -R -s -e --argjson r "$(last_record)" '$r.steps[0].argv == (split("\u0000")[:-1])'
	local pasted
	pasted=$(last_record | jq -r '.steps[0].run')
	# As a user would paste it into a POSIX shell.
	run sh -c "$pasted"
	assert_output "$(printf '%s|' "${args[@]:2}")"
	# Words that need no quotes get none.
	[[ $pasted == "printf '%s|' 'it'\\''s' '' "* ]]
}

@test "config and detected steps record argv null; tested is null for config steps" {
	echo '{"verify": {"steps": [{"name": "x", "run": "true"}]}}' >forge.json
	forge-verify -q
	last_record | jq -e '.steps[0].argv == null and .steps[0].run == "true" and .tested == null'
	rm forge.json
	printf 'test:\n\ttrue\n' >Makefile
	forge-verify -q
	last_record | jq -e '.steps[0].argv == null and .steps[0].run == "make test" and has("tested")'
}

@test "--report shows a -- step shell-quoted" {
	forge-verify -q -- sh -c 'exit 0' >/dev/null
	run forge-verify --report
	assert_success
	assert_output --partial "command (sh -c 'exit 0') ok"
}
