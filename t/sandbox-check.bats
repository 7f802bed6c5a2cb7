#!/usr/bin/env bats
# forge-sandbox check (SPEC 4.6): forge-probe inside the running sandbox,
# against canaries forge sets up on the host. Real namespace sandboxes
# (bwrap, rootfs "host") for the healthy cases and for up's refusal; the msb
# TEST DOUBLE (t/stubs/msb-stub) for a sandbox that contains nothing: its
# exec runs the command ON THE HOST, so every probe must get through.
load test_helper
load sandbox_helper

# Every probe, in the order reported, with the class SPEC 4.6 gives it.
PROBES='canary:filesystem forge-dir:filesystem hooks:git config:git commondir:git alternates:git proc-sys:kernel loopback:network non-public:network outside-allow-list:network secret:secrets tty:process unshare:kernel mount:kernel keyctl:kernel bpf:kernel io_uring_setup:kernel'

setup() {
	sandbox_setup
	unset HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy
	NAME=$(expected_name "$REPO")
}

teardown() {
	[ -z "${BWRAP:-}" ] || forge-sandbox rm "$REPO" >/dev/null 2>&1 || :
	[ -z "${NOBODY_REPO:-}" ] || as_nobody forge-sandbox rm "$NOBODY_REPO" >/dev/null 2>&1 || :
	[ -z "${OWNER_REPO:-}" ] || forge-sandbox rm "$OWNER_REPO" >/dev/null 2>&1 || :
	[ -z "${OWNER:-}" ] || userdel "$OWNER" 2>/dev/null || :
	forge_test_teardown
}

# json_shape FILE NAME BACKEND: the document of SPEC 4.6, with every probe
# once, in order, with its class; prints nothing, fails on a difference.
json_shape() {
	jq -e --arg n "$2" --arg b "$3" --arg want "$PROBES" '
		($want | split(" ") | map(split(":") | {name: .[0], class: .[1]})) as $w
		| .sandbox == $n and .backend == $b and (.held | type) == "boolean"
		  and ([.probes[] | {name, class}] == $w)
		  and all(.probes[]; (.held | type) == "boolean" and (.detail | type) == "string" and (keys == ["class", "detail", "held", "name"]))
		  and .held == all(.probes[]; .held)' "$1" >/dev/null
}

# nothing_left ROOT STATEHOME: no probe file, canary folder or listener is left.
nothing_left() {
	run find "$1/.forge" "$1/.git/hooks" -name 'forge-probe*'
	assert_output ''
	[ ! -e "$1/.git/commondir" ]
	[ ! -e "$1/.git/objects/info/alternates" ]
	run find "$2" "$TMPDIR" -maxdepth 2 -name 'forge-check.*'
	assert_output ''
	run running_with 'forge-probe listen'
	assert_failure
}

# stub_up NETWORK-JSON: up of a sandbox of the msb stub (use_stub), which
# lists it as running, with this sandbox.network; FORGE_T_SECRET, its
# secret, is set.
stub_up() {
	select_msb_backend
	use_stub
	printf '{"sandbox": {"backend": "msb", "network": %s}}\n' "$1" >"$XDG_CONFIG_HOME/forge/config.json"
	printf '[{"created_at":"2026-11-30T00:00:00Z","image":"oc-forge-sandbox:latest","name":"%s","status":"Running"}]\n' \
		"$NAME" >"$STUB_DIR/ls.out"
	export FORGE_T_SECRET=forge-check-secret-value-4711
	forge-sandbox up >/dev/null 2>&1
}

@test "check: a healthy namespace sandbox (root invoker): every probe held, exit 0, the JSON document of SPEC 4.6" {
	need_bwrap
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"allow": ["example.com"], "secrets": [{"env": "FORGE_T_SECRET", "hosts": ["api.example.com"]}]}}}'
	export FORGE_T_SECRET=forge-check-secret-value-4711
	forge-sandbox up >/dev/null
	run --separate-stderr forge-sandbox check --json
	printf '%s\n' "$output" >"$SCRATCH/check.json"
	jq -r '.probes[] | select(.held | not) | "\(.name): \(.detail)"' "$SCRATCH/check.json"
	assert_success
	json_shape "$SCRATCH/check.json" "$NAME" bwrap
	[ "$(jq '.held' "$SCRATCH/check.json")" = true ]
	run --separate-stderr forge-sandbox check
	assert_success
	assert_line --index 0 "containment probes of $NAME (bwrap):"
	[ "${#lines[@]}" -eq 18 ]
	nothing_left "$REPO" "$XDG_STATE_HOME"
}

@test "check: a healthy namespace sandbox of an unprivileged user: every probe held, exit 0" {
	need_bwrap
	[ "$(id -u)" = 0 ] || skip "needs root to become the unprivileged user nobody"
	nobody_sandbox
	run --separate-stderr as_nobody forge-sandbox check "$NOBODY_REPO" --json
	printf '%s\n' "$output" >"$SCRATCH/check.json"
	jq -r '.probes[] | select(.held | not) | "\(.name): \(.detail)"' "$SCRATCH/check.json"
	assert_success
	json_shape "$SCRATCH/check.json" "$(expected_name "$NOBODY_REPO")" bwrap
	nothing_left "$NOBODY_REPO" "$SCRATCH/nobody/.local/state"
}

@test "check: root starting another user's worktree: the canary is one that user could read, and it is not there" {
	need_bwrap
	[ "$(id -u)" = 0 ] || skip "needs root"
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}}}'
	owner_worktree "forge-c$$"
	forge-sandbox up "$OWNER_REPO" >/dev/null 2>&1
	run --separate-stderr forge-sandbox check "$OWNER_REPO" --json
	detail=$(jq -r '.probes[] | select(.name == "canary") | .detail' <<<"$output")
	[[ $detail == "cannot open /tmp/forge-check."*"/canary: No such file or directory" ]]
	[ "$(jq -r '.probes[] | select(.name == "canary") | .held' <<<"$output")" = true ]
}

@test "check: an msb 'sandbox' whose exec runs on the host (the stub): every probe got through, exit 1, each named" {
	[ "$(id -u)" = 0 ] || skip "as root on the host, /proc/sys, unshare and mount are open to the probe"
	stub_up '{"allow": ["example.com"], "secrets": [{"env": "FORGE_T_SECRET", "hosts": ["api.example.com"]}]}'
	# script(1) gives the run a controlling terminal, as a host shell has.
	script -qec "forge-sandbox check --json >'$SCRATCH/check.json' 2>'$SCRATCH/check.err'; echo \$? >'$SCRATCH/rc'" /dev/null >/dev/null
	[ "$(cat "$SCRATCH/rc")" = 1 ]
	json_shape "$SCRATCH/check.json" "$NAME" msb
	jq -r '.probes[] | select(.held) | "held: \(.name): \(.detail)"' "$SCRATCH/check.json"
	[ "$(jq '[.probes[] | select(.held)] | length' "$SCRATCH/check.json")" = 0 ]
	[ "$(jq '.held' "$SCRATCH/check.json")" = false ]
	for probe in $PROBES; do
		grep -q "^forge-sandbox: error: probe ${probe%%:*} got through (${probe#*:}):" "$SCRATCH/check.err"
	done
	# The value is what the host found, never what went in.
	run grep -c forge-check-secret-value-4711 "$SCRATCH/check.json" "$SCRATCH/check.err" "$STUB_DIR/calls"
	assert_output "$(printf '%s\n' "$SCRATCH/check.json:0" "$SCRATCH/check.err:0" "$STUB_DIR/calls:0")"
	# The probe ran through msb exec, in the worktree.
	run stub_calls
	assert_line --regexp "^exec --quiet $NAME --no-tty -w $REPO -- $REPO/\\.forge/forge-probe\\.[A-Za-z0-9]+ run "
	nothing_left "$REPO" "$XDG_STATE_HOME"
}

@test "check: a probe the sandbox does not answer, or a secret it claims held, counts as got through" {
	stub_up '{"secrets": [{"env": "FORGE_T_SECRET", "hosts": ["api.example.com"]}]}'
	# A lying sandbox: every probe "held", the secret's too, tty left out.
	for probe in $PROBES; do
		[ "${probe%%:*}" = tty ] || printf '%s\t%s\theld\tfine\n' "${probe%%:*}" "${probe#*:}"
	done >"$STUB_DIR/exec.out"
	echo 0 >"$STUB_DIR/exec.rc"
	run --separate-stderr forge-sandbox check --json
	assert_failure 1
	[ "$(jq -c '[.probes[] | select(.held | not) | .name]' <<<"$output")" = '["secret","tty"]' ]
	[ "$(jq -r '.probes[] | select(.name == "tty") | .detail' <<<"$output")" = 'no answer from the probe' ]
}

@test "check (msb): a sandbox with a kernel of its own (another boot id, a microVM): the kernel probes test the guest's and hold" {
	select_msb_backend
	use_stub
	printf '[{"created_at":"2026-11-30T00:00:00Z","image":"oc-forge-sandbox:latest","name":"%s","status":"Running"}]\n' \
		"$NAME" >"$STUB_DIR/ls.out"
	forge-sandbox up >/dev/null 2>&1
	# What a microVM's guest answers (canned: no VM boots here): its own
	# boot id, and system calls its own kernel allows.
	{
		printf 'boot_id\t-\tinfo\t00000000-1111-2222-3333-444444444444\n'
		for probe in $PROBES; do
			case ${probe#*:} in
			kernel) printf '%s\tkernel\tescaped\tallowed\n' "${probe%%:*}" ;;
			*) printf '%s\t%s\theld\tfine\n' "${probe%%:*}" "${probe#*:}" ;;
			esac
		done
	} >"$STUB_DIR/exec.out"
	echo 0 >"$STUB_DIR/exec.rc"
	run --separate-stderr forge-sandbox check --json
	assert_success
	[ "$(jq -r '.probes[] | select(.name == "keyctl") | .detail' <<<"$output")" = "the sandbox runs a kernel of its own (a microVM), not the host's: allowed" ]
	# The host's own boot id: the kernel probes count.
	sed -i "s/00000000-1111-2222-3333-444444444444/$(cat /proc/sys/kernel/random/boot_id)/" "$STUB_DIR/exec.out"
	rm -f "$STUB_DIR"/exec.count
	run --separate-stderr forge-sandbox check --json
	assert_failure 1
	[ "$(jq -c '[.probes[] | select(.held | not) | .name]' <<<"$output")" = '["proc-sys","unshare","mount","keyctl","bpf","io_uring_setup"]' ]
}

@test "check: interrupted while the probe runs (TERM to its process group), it leaves nothing on the host" {
	select_msb_backend
	use_stub
	printf '[{"created_at":"2026-11-30T00:00:00Z","image":"oc-forge-sandbox:latest","name":"%s","status":"Running"}]\n' \
		"$NAME" >"$STUB_DIR/ls.out"
	forge-sandbox up >/dev/null 2>&1
	# An msb whose exec hangs, after saying so.
	printf '#!/bin/sh\n[ "$1" != exec ] || { : >"%s/in-exec"; exec sleep 30; }\nexec "%s" "$@"\n' "$SCRATCH" "$FORGE_MSB" >"$SCRATCH/msb-hang"
	chmod +x "$SCRATCH/msb-hang"
	FORGE_MSB=$SCRATCH/msb-hang setsid forge-sandbox check >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do [ -e "$SCRATCH/in-exec" ] && break; sleep 0.1; done
	[ -e "$SCRATCH/in-exec" ]
	running_with 'forge-probe listen'
	ls "$REPO"/.forge/forge-probe.* >/dev/null
	kill -TERM -- "-$pid"
	status=0
	wait "$pid" || status=$?
	[ "$status" = 143 ]
	nothing_left "$REPO" "$XDG_STATE_HOME"
}

@test "check: no sandbox is 69 (namespace backend, and msb knowing none); usage errors are 64" {
	need_bwrap
	BWRAP=
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}}}'
	run --separate-stderr forge-sandbox check
	assert_failure 69
	[[ $stderr == *"no sandbox for $REPO"* ]]
	select_msb_backend
	use_stub
	run --separate-stderr forge-sandbox check --json
	assert_failure 69
	assert_output ''
	[[ $stderr == *"no sandbox for $REPO"* ]]
	run forge-sandbox check --bogus
	assert_failure 64
	run forge-sandbox check "$REPO" "$REPO"
	assert_failure 64
}

# broken_seccomp DIR: a helper folder like the build's, whose forge-seccomp
# gives a filter that allows every system call (one BPF instruction:
# return SECCOMP_RET_ALLOW). FORGE_HELPERDIR is how forge finds its helpers.
broken_seccomp() {
	mkdir -p "$1"
	for h in "$abs_top_builddir"/helpers/forge-*; do
		[ -x "$h" ] && [ -f "$h" ] && ln -s "$h" "$1/"
	done
	rm "$1/forge-seccomp"
	printf '#!/bin/sh\nprintf '\''\\006\\000\\000\\000\\000\\000\\377\\177'\''\n' >"$1/forge-seccomp"
	chmod +x "$1/forge-seccomp"
}

@test "up refuses a namespace sandbox that fails its fast probes: removed, exit 70 naming the probe" {
	need_bwrap
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"allow": ["example.com"]}}}'
	broken_seccomp "$SCRATCH/helpers"
	FORGE_HELPERDIR=$SCRATCH/helpers run --separate-stderr forge-sandbox up
	assert_failure 70
	assert_output ''
	[[ $stderr == *"$NAME failed its containment probes ("*keyctl*"); removing it"* ]]
	[[ $stderr == *"    keyctl (kernel): allowed"* ]]
	# Not handed out: no state, no process, no registry entry.
	[ ! -e "$XDG_STATE_HOME/forge/bwrap/$NAME" ]
	[ ! -e "$XDG_STATE_HOME/forge/sandboxes/$NAME" ]
	[ ! -e "$XDG_STATE_HOME/forge/sandboxes/$NAME.up" ]
	run running_with "forge-sandbox-init.*$NAME"
	assert_failure
	run forge-sandbox check
	assert_failure 69
	# The same host with forge's own filter: up hands it out.
	run --separate-stderr forge-sandbox up
	assert_success
	assert_output "$NAME"
}

@test "check: a secret's value that the sandbox can see (passed in under another env name) is found by the host: secret got through" {
	need_bwrap
	# forge drops a secret's own name from sandbox.network.env; the same value
	# under another name is what a careless config leaks.
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"allow": ["example.com"], "env": ["FORGE_T_LEAK"], "secrets": [{"env": "FORGE_T_SECRET", "hosts": ["api.example.com"]}]}}}'
	export FORGE_T_SECRET=forge-check-secret-value-4711 FORGE_T_LEAK=forge-check-secret-value-4711
	forge-sandbox up >/dev/null 2>&1
	run --separate-stderr forge-sandbox check --json
	assert_failure 1
	[ "$(jq -r '.probes[] | select(.name == "secret") | .held' <<<"$output")" = false ]
	[ "$(jq -r '.probes[] | select(.name == "secret") | .detail' <<<"$output")" = 'the value of FORGE_T_SECRET is visible inside; environment, /proc/*/environ and the CA folder written out for the host to search' ]
	[[ $stderr == *'error: probe secret got through (secrets): the value of FORGE_T_SECRET is visible inside'* ]]
	run grep -c forge-check-secret-value-4711 <<<"$output$stderr"
	assert_output 0
}

@test "check in a linked worktree (the project mounted read-only around it): up hands it out, the probes aim at its own git dir" {
	need_bwrap
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"allow": ["example.com"]}}}'
	git -C "$REPO" worktree add -q "$SCRATCH/linked"
	LINKED=$(cd "$SCRATCH/linked" && pwd -P)
	cd "$LINKED"
	run --separate-stderr forge-sandbox up
	assert_success
	run --separate-stderr forge-sandbox check --json
	forge-sandbox rm >/dev/null
	[ "$(jq -r '.probes[] | select(.name == "commondir") | .detail' <<<"$output")" = "cannot open $REPO/.git/worktrees/linked/commondir for writing: Read-only file system" ]
	[ "$(jq -r '.probes[] | select(.name == "canary") | .held' <<<"$output")" = true ]
}

@test "docs: forge-sandbox(1) names every probe with its class and check's exit statuses; --help and README show check" {
	page=$(groff -man -Tascii -P-c -P-b -P-u -P-o "$abs_top_srcdir/man/forge-sandbox.1" 2>/dev/null | tr -s ' \n' '  ')
	for probe in canary:filesystem forge-dir:filesystem proc-sys:kernel loopback:network non-public:network outside-allow-list:network secret:secrets tty:process; do
		[[ $page == *"${probe%%:*} (${probe#*:})"* ]] || fail "forge-sandbox(1) does not list ${probe%%:*} (${probe#*:})"
	done
	[[ $page == *"hooks, config, commondir, alternates (git)"* ]]
	[[ $page == *"unshare, mount, keyctl, bpf, io_uring_setup (kernel)"* ]]
	[[ $page == *"1 check: a probe got through"* ]]
	[[ $page == *"sandbox it created or adopted failed its containment probes, and was removed"* ]]
	run forge-sandbox --help
	assert_line --partial 'forge-sandbox check [DIR] [--json]'
	assert_line --partial '  check        containment self-test of the running sandbox'
	grep -q '^### A sandbox proves it contains: `forge-sandbox check`$' "$abs_top_srcdir/README.md"
}
