#!/usr/bin/env bats
# forge-verify --sandbox (SPEC 3.6): every step runs in a sandbox. The
# namespace backend is tested with REAL sandboxes (bubblewrap, `rootfs:
# host`, no Docker needed); the msb backend only through the msb TEST DOUBLE
# t/stubs/msb-stub, since these machines cannot boot a microVM (the tests
# that use it say so in their names).
load test_helper
load sandbox_helper

setup() { bwrap_setup; }

teardown() {
	[ -z "${REPO:-}" ] || forge-sandbox rm "$REPO" >/dev/null 2>&1 || :
	# A failed test may leave a slot's or a copy's sandbox: its init dies
	# (SIGKILL to a PID-namespace init ends everything in it).
	[ -z "${REPO:-}" ] || (cd "$REPO" && forge-verify --prune) >/dev/null 2>&1 || :
	local pidfile
	for pidfile in "$XDG_STATE_HOME"/forge/bwrap/*/pid; do
		[ -f "$pidfile" ] && kill -KILL "$(cut -d' ' -f1 "$pidfile")" 2>/dev/null || :
	done
	forge_test_teardown
}

@test "--sandbox: the step runs in the worktree's namespace sandbox as uid 1000, in the same directory, with FORGE_VERIFY*" {
	mkdir -p "$REPO/sub"
	git -C "$REPO" commit -q --allow-empty -m second
	run --separate-stderr forge-verify --sandbox --change c-1 --json -- \
		sh -c 'printf "%s|%s|%s|%s|%s|%s\n" "$(id -u)" "$(pwd -P)" "$FORGE_VERIFY" "$FORGE_VERIFY_ISOLATED" "$FORGE_VERIFY_SOURCE" "$FORGE_CHANGE" >inside.txt'
	assert_success
	[ "$(cat "$REPO/inside.txt")" = "1000|$REPO|1|0|$REPO|c-1" ]
	# The worktree's own sandbox, as forge-sandbox up makes it: it stays up.
	[ "$(printf '%s' "$output" | jq -c .sandbox)" = "{\"name\":\"$NAME\",\"backend\":\"bwrap\"}" ]
	[ "$(last_record | jq -c .sandbox)" = "{\"name\":\"$NAME\",\"backend\":\"bwrap\"}" ]
	[ "$(printf '%s' "$output" | jq -r .verdict)" = PASS ]
	run forge-verify --report
	assert_output --partial "  sandbox: $NAME (bwrap)"
	run forge-sandbox ls --json
	[ "$(printf '%s' "$output" | jq -r --arg n "$NAME" '.[] | select(.name == $n) | .status')" = running ]
	# Without --sandbox the record says so.
	run --separate-stderr forge-verify --json -- true
	[ "$(printf '%s' "$output" | jq -c .sandbox)" = null ]
}

@test "--sandbox: a sandbox the run started is said to be left running, once, with the command that removes it; not when it was up, not with -q, not for --isolated" {
	note="forge-verify: the sandbox $NAME for $REPO is left running; forge-sandbox rm $REPO removes it"
	run --separate-stderr forge-verify --sandbox -- true
	assert_success
	[[ $stderr == *"$note"* ]]
	run grep -c -F -- 'is left running' <<<"$stderr"
	assert_output 1
	run forge-sandbox exec -- true
	assert_success
	# Already up: adopted, nothing to say.
	run --separate-stderr forge-verify --sandbox -- true
	assert_success
	[[ $stderr != *'left running'* ]]
	# -q prints only the verdict.
	forge-sandbox rm >/dev/null 2>&1
	run --separate-stderr forge-verify -q --sandbox -- true
	assert_success
	[ "$stderr" = '' ]
	forge-sandbox rm >/dev/null 2>&1
	# A copy's sandbox is removed with the run: nothing is left running.
	run --separate-stderr forge-verify --isolated --sandbox -- true
	assert_success
	[[ $stderr != *'left running'* ]]
}

@test "--isolated --sandbox: each cold run's ephemeral sandbox takes its lock and state along; the state folder does not grow" {
	forge-verify --isolated --sandbox -- true >/dev/null 2>&1
	before=$(find "$XDG_STATE_HOME" | LC_ALL=C sort)
	for _ in 1 2 3; do
		run forge-verify --isolated --sandbox -- true
		assert_success
	done
	[ "$(find "$XDG_STATE_HOME" | LC_ALL=C sort)" = "$before" ]
	run find "$XDG_STATE_HOME" -name '*.lock'
	assert_output ''
}

@test "--sandbox adopts the sandbox forge-sandbox up started (its /tmp is the step's)" {
	forge-sandbox up >/dev/null 2>&1
	forge-sandbox exec -- sh -c 'echo from-up >/tmp/mark'
	run --separate-stderr forge-verify --sandbox -- sh -c 'cat /tmp/mark >seen.txt'
	assert_success
	[ "$(cat "$REPO/seen.txt")" = from-up ]
	[ "$(cat "$REPO/.forge/runs/"*/sandbox.log 2>/dev/null || :)" = '' ]
}

@test "--sandbox: concurrent runs bring the sandbox up once and all run in it" {
	pids=''
	for i in 1 2 3; do
		forge-verify --sandbox -- true >"$SCRATCH/out.$i" 2>&1 &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086 # a list of PIDs
	wait_each $pids
	for i in 1 2 3; do
		grep -qx 'Verdict: PASS' "$SCRATCH/out.$i" || { cat "$SCRATCH/out.$i"; false; }
	done
	# One namespace sandbox: one bwrap with its hostname.
	n=$(pgrep -c -f -- "^bwrap .*--hostname $NAME ") || :
	[ "$n" = 1 ]
	[ ! -e "$XDG_STATE_HOME/forge/sandboxes/$NAME.up" ]
}

@test "--sandbox: host files outside the mounts are invisible to a step (the same step sees them on the host)" {
	printf 'secret\n' >"$HOME/host-only"
	run forge-verify -- cat "$HOME/host-only"
	assert_success
	run forge-verify --sandbox -- cat "$HOME/host-only"
	assert_failure 1
	[ "$(last_record | jq -r '.steps[0].exit')" = 1 ]
	grep -q 'No such file' "$REPO/.forge/runs/$(last_record | jq -r .run)/1-command.log"
}

@test "--sandbox: exit codes pass through verbatim: FAIL with the step's code, the breaker counts, config steps run with sh" {
	run forge-verify --sandbox -- sh -c 'exit 7'
	assert_failure 1
	[ "$(last_record | jq -r '.steps[0].exit')" = 7 ]
	[ "$(last_record | jq -r .verdict)" = FAIL ]
	[ "$(forge-state get "$REPO/.forge/breaker" streak)" = 1 ]
	# The command is argv, whatever its name: "./a=b" is a program, not a variable.
	printf '#!/bin/sh\nexit 12\n' >"$REPO/a=b"
	chmod +x "$REPO/a=b"
	run forge-verify --sandbox -- ./a=b
	[ "$(last_record | jq -r '.steps[0].exit')" = 12 ]
	write_config '{"verify": {"sandbox": true, "breaker": {"threshold": 10}, "steps": [{"name": "one", "run": "test $(id -u) = 1000"}, {"name": "two", "run": "exit 42"}]}}'
	run forge-verify
	assert_failure 1
	[ "$(last_record | jq -c '[.steps[].exit]')" = '[0,42]' ]
	[ "$(last_record | jq -r .sandbox.backend)" = bwrap ]
	[ "$(forge-state get "$REPO/.forge/breaker" streak)" = 3 ]
}

@test "--sandbox: a timeout kills the step's whole process tree inside the sandbox (TERM ignored too): nothing is left" {
	run forge-verify --sandbox --timeout 1 -- sh -c 'sleep 1001 & (trap "" TERM; exec sleep 1002) & sleep 1003'
	assert_failure 1
	[ "$(last_record | jq -r '.steps[0].reason')" = timeout ]
	run forge-sandbox exec -- sh -c 'cat /proc/[0-9]*/cmdline | tr "\0" " "'
	assert_success
	refute_output --partial 'sleep 100'
	run ! running_with 'sleep 100[123]'
	# What a step leaves behind when it ends by itself goes too.
	run forge-verify --sandbox -- sh -c '(trap "" TERM; exec sleep 1004) & exit 0'
	assert_success
	run ! running_with 'sleep 1004'
}

@test "--sandbox: the egress rules apply to the steps: with an allow-list the step has only lo (the host has more)" {
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"allow": ["example.com"]}}}'
	ifaces='tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort >"$0"'
	run forge-verify -- sh -c "$ifaces" "$SCRATCH/host-ifaces"
	assert_success
	[ "$(cat "$SCRATCH/host-ifaces")" != lo ]
	run forge-verify --sandbox -- sh -c "$ifaces" "$REPO/ifaces"
	assert_success
	[ "$(cat "$REPO/ifaces")" = lo ]
}

@test "--sandbox: a backend that cannot start is an ERROR, exit 69 with the reason; nothing runs, the streak is untouched" {
	mkdir -p "$SCRATCH/badbin"
	printf '#!/bin/sh\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n' >"$SCRATCH/badbin/bwrap"
	chmod +x "$SCRATCH/badbin/bwrap"
	run forge-verify -- false
	[ "$(forge-state get "$REPO/.forge/breaker" streak)" = 1 ]
	PATH="$SCRATCH/badbin:$PATH" run --separate-stderr forge-verify --sandbox -- touch "$REPO/ran"
	assert_failure 69
	[ ! -e "$REPO/ran" ]
	assert_output 'Verdict: ERROR'
	[[ $stderr == *"no sandbox for the steps (bwrap sandbox $NAME"*"nothing was run"* ]]
	[[ $stderr == *'Permission denied'* ]]
	[ "$(last_record | jq -r .verdict)" = ERROR ]
	[ "$(last_record | jq -c .sandbox)" = null ]
	[ "$(forge-state get "$REPO/.forge/breaker" streak)" = 1 ]
	# verify.sandbox in the configuration is the same promise.
	write_config '{"verify": {"sandbox": true}}'
	PATH="$SCRATCH/badbin:$PATH" run forge-verify -q -- touch "$REPO/ran"
	assert_failure 69
	[ ! -e "$REPO/ran" ]
	[[ $output == *'Permission denied'* ]]
}

@test "--sandbox with backend msb (msb TEST DOUBLE: no microVM boots here): up as forge-sandbox does, every step through msb exec in the same directory" {
	select_msb_backend
	use_stub
	printf '[{"reference":"oc-forge-sandbox:latest","digest":"sha256:0"}]\n' >"$STUB_DIR/images.out"
	run --separate-stderr forge-verify --sandbox --json -- sh -c 'exit 5'
	assert_failure 1
	[ "$(printf '%s' "$output" | jq -c .sandbox)" = "{\"name\":\"$NAME\",\"backend\":\"msb\"}" ]
	[ "$(printf '%s' "$output" | jq -r '.steps[0].exit')" = 5 ]
	run stub_calls
	assert_line --partial "create oc-forge-sandbox:latest --name $NAME"
	assert_line "exec --quiet $NAME --no-tty -w $REPO -- env FORGE_VERIFY=1 FORGE_VERIFY_ISOLATED=0 FORGE_VERIFY_SOURCE=$REPO sh -c exit 5"
	# A missing image: ERROR 69 with msb's reason, no exec.
	rm -f "$STUB_DIR/calls"
	printf '[]\n' >"$STUB_DIR/images.out"
	printf '[]\n' >"$STUB_DIR/ls.out"
	run --separate-stderr forge-verify --sandbox -- true
	assert_failure 69
	[[ $stderr == *'forge-sandbox build-image --tag oc-forge-sandbox:latest'* ]]
	run stub_calls
	refute_line --partial 'exec --quiet'
}

# --- --isolated --sandbox -------------------------------------------------------

# sandboxes: the namespace sandboxes that exist (state folders), one per line.
sandboxes() {
	local d
	for d in "$XDG_STATE_HOME"/forge/bwrap/*/; do
		[ ! -d "$d" ] || basename "$d"
	done
}

@test "--isolated --sandbox: the steps run in the copy, in a sandbox that cannot see or change the real tree; git works on the borrowed objects" {
	printf 'changed\n' >>"$REPO/README"
	printf 'new\n' >"$REPO/untracked"
	mkdir -p "$REPO/sub" && printf 'inside\n' >"$REPO/sub/f"
	before=$(tree_hash "$REPO")
	head=$(git -C "$REPO" rev-parse HEAD)
	# Without the sandbox the copy's steps can reach the real tree.
	run forge-verify --isolated -- test ! -e "$REPO/README"
	assert_failure 1
	# A custom mount inside the source would show it: not mounted.
	write_config "$(jq -n --arg d "$REPO/sub" '{sandbox: {mounts: [{host: $d}]}, verify: {steps: [
		{name: "hidden", run: "test ! -e \"$FORGE_VERIFY_SOURCE/README\" && test ! -e \"$FORGE_VERIFY_SOURCE/sub/f\""},
		{name: "copy", run: "test \"$(pwd -P)\" != \"$FORGE_VERIFY_SOURCE\" && grep -q changed README && test -f untracked && test \"$FORGE_VERIFY_ISOLATED\" = 1"},
		{name: "history", run: "git log --oneline | grep -q initial"},
		{name: "objects read-only", run: "! touch \"$FORGE_VERIFY_SOURCE/.git/objects/x\" 2>/dev/null"},
		{name: "vandal", run: "rm -rf ./* .git/refs; echo pwned >\"$FORGE_VERIFY_SOURCE/README\"; git -C \"$FORGE_VERIFY_SOURCE\" update-ref refs/heads/main HEAD~0 2>/dev/null; true"}]}}')"
	before=$(tree_hash "$REPO")
	run --separate-stderr forge-verify --isolated --sandbox --json
	assert_success
	[ "$(printf '%s' "$output" | jq -c '[.steps[].exit]')" = '[0,0,0,0,0]' ]
	[ "$(printf '%s' "$output" | jq -r .isolated)" = cold ]
	[ "$(printf '%s' "$output" | jq -r .sandbox.backend)" = bwrap ]
	[[ $stderr == *"$REPO/sub is not mounted in the sandbox of an isolated copy"* ]]
	[ "$(tree_hash "$REPO")" = "$before" ]
	[ "$(git -C "$REPO" rev-parse HEAD)" = "$head" ]
	[ "$(cat "$REPO/sub/f")" = inside ]
}

@test "--isolated --sandbox: the ephemeral sandbox is removed after a PASS, a FAIL and a timeout" {
	run forge-verify --isolated --sandbox -- true
	assert_success
	name=$(last_record | jq -r .sandbox.name)
	[ "$name" != "$NAME" ]
	[ "$(sandboxes)" = '' ]
	[ ! -e "$XDG_STATE_HOME/forge/sandboxes/$name" ]
	run forge-verify --isolated --sandbox -- sh -c 'sleep 1011 & exit 3'
	assert_failure 1
	[ "$(sandboxes)" = '' ]
	run forge-verify --isolated --sandbox --timeout 1 -- sh -c 'setsid sleep 1012 & sleep 1013'
	assert_failure 1
	[ "$(sandboxes)" = '' ]
	run ! running_with 'sleep 101[123]'
}

@test "--isolated --sandbox: SIGTERM during a step removes the ephemeral sandbox and everything in it (exit 143)" {
	# $((...)): only the step's own process has "sleep 1022" in its command line.
	forge-verify --isolated --sandbox -- sh -c 'setsid sleep $((1000 + 21)) & sleep $((1000 + 22))' >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do running_with 'sleep 1022' && break; sleep 0.1; done
	running_with 'sleep 1022'
	[ "$(sandboxes)" != '' ]
	kill -TERM "$pid"
	status=0
	wait "$pid" || status=$?
	[ "$status" = 143 ]
	[ "$(sandboxes)" = '' ]
	run ! running_with 'sleep 102[12]'
	[ "$(last_record | jq -r '.steps[0].reason')" = interrupted ] || [ "$(last_record | jq -r .verdict)" = ERROR ]
}

@test "--isolated --warm --sandbox: a slot's sandbox lives for its run: nothing of it runs on while the host resets the slot; one a killed run left is removed before the reset" {
	run --separate-stderr forge-verify --isolated --warm --sandbox --json -- sh -c 'echo one >/tmp/left'
	assert_success
	name=$(printf '%s' "$output" | jq -r .sandbox.name)
	[ "$name" != "$NAME" ]
	[ "$(sandboxes)" = '' ]
	# A process that escaped its group with setsid goes with the run.
	run forge-verify --isolated --warm --sandbox -- sh -c \
		'setsid sh -c "touch /tmp/escaped; exec sleep 1031" >/dev/null 2>&1 & while [ ! -e /tmp/escaped ]; do sleep 0.05; done'
	assert_success
	run ! running_with 'sleep 1031'
	# The same slot, a fresh sandbox: /tmp empty, the slot's .git and .forge read-only.
	run --separate-stderr forge-verify --isolated --warm --sandbox --json -- sh -c 'test ! -e /tmp/left && test "$(id -u)" = 1000 && ! touch .forge/x && ! touch .git/commondir && ! touch .git/hooks/x'
	assert_success
	[ "$(printf '%s' "$output" | jq -r .sandbox.name)" = "$name" ]
	# A run killed with its sandbox up: the next run removes that sandbox
	# before it resets the slot (the step's process would race the reset).
	forge-verify --isolated --warm --sandbox -- sh -c 'exec sleep $((1000 + 42))' >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do running_with 'sleep 1042' && break; sleep 0.1; done
	running_with 'sleep 1042'
	kill -KILL "$pid"
	wait "$pid" || :
	[ "$(sandboxes)" = "$name" ]
	run forge-verify --isolated --warm -- true
	assert_success
	[ "$(sandboxes)" = '' ]
	run ! running_with 'sleep 1042'
	run forge-verify --prune
	assert_success
	[ ! -e "$XDG_STATE_HOME/forge/sandboxes/$name" ]
}

@test "--isolated --sandbox: the sandbox of a SIGKILLed run's copy goes with the copy at the next run" {
	forge-verify --isolated --sandbox -- sh -c 'exec sleep $((1000 + 41))' >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do running_with 'sleep 1041' && break; sleep 0.1; done
	running_with 'sleep 1041'
	kill -KILL "$pid"
	wait "$pid" || :
	[ "$(sandboxes)" != '' ]
	run forge-verify --isolated -- true
	assert_success
	[ "$(sandboxes)" = '' ]
	run ! running_with 'sleep 1041'
}

@test "--isolated --sandbox with backend msb (msb TEST DOUBLE: no microVM boots here): the copy's own plan, no mount of the real tree, the sandbox removed after the run" {
	select_msb_backend
	use_stub
	printf '[{"reference":"oc-forge-sandbox:latest","digest":"sha256:0"}]\n' >"$STUB_DIR/images.out"
	run --separate-stderr forge-verify --isolated --sandbox --json -- sh -c 'exit 4'
	assert_failure 1
	name=$(printf '%s' "$output" | jq -r .sandbox.name)
	[ "$(printf '%s' "$output" | jq -r .sandbox.backend)" = msb ]
	[ "$name" != "$NAME" ]
	[ "$(printf '%s' "$output" | jq -r '.steps[0].exit')" = 4 ]
	stub_call 4
	[ "${argv[0]} ${argv[3]}" = "create $name" ]
	vols=$(for ((i = 0; i < ${#argv[@]} - 1; i++)); do [ "${argv[i]}" != -v ] || printf '%s\n' "${argv[i + 1]}"; done)
	copy=$(printf '%s\n' "$vols" | sed -n '1s/:.*//p')
	[[ $copy == "$TMPDIR"/forge-verify.*/repo-* ]]
	printf '%s\n' "$vols" | grep -qx "$copy/.git/hooks:$copy/.git/hooks:ro"
	printf '%s\n' "$vols" | grep -qx "$copy/.forge:$copy/.forge:ro"
	printf '%s\n' "$vols" | grep -qx "$REPO/.git/objects:$REPO/.git/objects:ro"
	run grep -c "^$REPO[:/]" <<<"$vols"
	assert_output 1
	run stub_calls
	assert_line "exec --quiet $name --no-tty -w $copy -- env FORGE_VERIFY=1 FORGE_VERIFY_ISOLATED=1 FORGE_VERIFY_SOURCE=$REPO sh -c exit 4"
	assert_line "rm --force $name --quiet"
	[ ! -e "$XDG_STATE_HOME/forge/sandboxes/$name" ]
}

@test "--sandbox: no file a sandboxed step names is kept as evidence (the sandbox could swap a folder for a link between forge's check and its copy)" {
	mkdir -p sub
	echo inside >sub/report.txt
	run --separate-stderr forge-verify --sandbox -- sh -c 'echo "see sub/report.txt"; exit 1'
	assert_failure 1
	[[ $stderr == *'| see sub/report.txt'* ]]
	[[ $stderr != *'kept: '* ]]
	run find .forge/runs -path '*/files/*'
	assert_output ''
	run --separate-stderr forge-verify --isolated --sandbox -- sh -c 'echo "see sub/report.txt"; exit 1'
	assert_failure 1
	[[ $stderr != *'kept: '* ]]
	run find .forge/runs -path '*/files/*'
	assert_output ''
	# Without a sandbox the file is kept (the breaker closed again first).
	forge-verify --reset >/dev/null 2>&1
	run --separate-stderr forge-verify -- sh -c 'echo "see sub/report.txt"; exit 1'
	assert_failure 1
	[[ $stderr == *'kept: sub/report.txt'* ]]
}
