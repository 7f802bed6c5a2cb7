#!/usr/bin/env bats
# forge-sandbox up / exec / doctor / rm against the msb TEST DOUBLE
# (t/stubs/msb-stub): only what needs a booted guest or an msb answer these
# machines cannot produce — adoption of running and transient sandboxes,
# exec, the cache-disk preparation, secret convergence, scripted failures.
# Every test here uses the stub; the real msb is in t/sandbox-msb.bats.
load test_helper
load sandbox_helper

setup() {
	sandbox_setup
	select_msb_backend
	use_stub
	NAME=$(expected_name "$REPO")
	printf '[{"reference":"oc-forge-sandbox:latest","digest":"sha256:0"}]\n' >"$STUB_DIR/images.out"
}
teardown() { forge_test_teardown; }

# ls_says STATUS [N]: the stub's msb ls shows the sandbox in STATUS (for the
# Nth call only, with N).
ls_says() {
	printf '[{"created_at":"2026-11-30T00:00:00Z","image":"oc-forge-sandbox:latest","name":"%s","status":"%s"}]\n' \
		"$NAME" "$1" >"$STUB_DIR/ls${2:+.$2}.out"
}

# bound SECRET...: the stub's msb inspect shows SECRETs bound to the sandbox.
bound() {
	jq -n --arg n "$NAME" '{name: $n, status: "Running", config: {network: {secrets: {secrets: [$ARGS.positional[] | {env_var: ., placeholder: "$MSB_\(.)"}]}}}}' \
		--args -- "$@" >"$STUB_DIR/inspect.out"
}

prep() { printf '%s\n' "exec --quiet $NAME --no-tty -- sudo -n sh -c chown agent:agent /opt/forge/.cache && chmod 0777 /opt/forge/.cache"; }

@test "up (stub): absent sandbox: doctor, ls, image check, create with exactly the plan, cache-disk prep; prints the name" {
	plan_argv
	run --separate-stderr forge-sandbox up
	assert_success
	assert_output "$NAME"
	run stub_calls
	assert_output "$(printf '%s\n' doctor 'ls --format json' 'images --format json' "${plan[*]:1}" "$(prep)" "inspect $NAME --format json")"
	# The create call is the plan, argument for argument.
	stub_call 4
	[ "${argv[*]}" = "${plan[*]:1}" ]
	[ "${#argv[@]}" -eq $((${#plan[@]} - 1)) ]
	# Recorded: the worktree for prune, the egress rules in .forge/sandbox/.
	[ "$(forge-state get "$XDG_STATE_HOME/forge/sandboxes/$NAME" worktree)" = "$REPO" ]
	[ "$(forge-state get "$REPO/.forge/sandbox/$NAME" egress x)" = '' ]
	grep -qx '/.forge/' .git/info/exclude
	[ -z "$(git status --porcelain)" ]
	# up creates the scratch dir that plan only names.
	[ -d "$TMPDIR/opencode" ]
}

@test "up (stub): a missing hooks dir and .forge are created empty and mounted read-only" {
	rm -r .git/hooks
	run --separate-stderr forge-sandbox up
	assert_success
	[ -d .git/hooks ]
	[ ! -L .git/hooks ]
	[ -z "$(ls -A .git/hooks)" ]
	[ -d .forge ]
	[ ! -L .forge ]
	stub_call 4
	[ "${argv[0]}" = create ]
	[[ " ${argv[*]} " == *" -v $REPO/.git/hooks:$REPO/.git/hooks:ro "* ]]
	[[ " ${argv[*]} " == *" -v $REPO/.forge:$REPO/.forge:ro "* ]]
	[ -z "$(git status --porcelain)" ]
}

@test "up (stub): a worktree outside the project: the read-only project is not mounted, said once at create (mountProjectReadonly)" {
	git worktree add -q "$SCRATCH/wt" 2>/dev/null
	cd "$SCRATCH/wt"
	NAME=$(expected_name "$SCRATCH/wt")
	want="warning: sandbox.mountProjectReadonly: the project $REPO is not mounted: it holds the read-write $REPO/.git"
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr == *"$want"* ]]
	stub_call 4
	[[ " ${argv[*]} " != *" -v $REPO:$REPO:ro "* ]]
	[[ " ${argv[*]} " == *" -v $REPO/.git:$REPO/.git "* ]]
	# Not news any more: adoption and plan are quiet.
	ls_says Running
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr != *mountProjectReadonly* ]]
	run --separate-stderr forge-sandbox plan
	[ -z "$stderr" ]
	# Not asked for: nothing to say.
	write_config '{"sandbox": {"mountProjectReadonly": false}}'
	rm "$STUB_DIR/ls.out"
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr != *mountProjectReadonly* ]]
}

@test "up (stub): the image is not in msb's cache: exit 69 with the exact build-image command, nothing created" {
	printf '[{"reference":"other:latest"}]\n' >"$STUB_DIR/images.out"
	write_config '{"sandbox": {"image": "my-image:2"}}'
	run forge-sandbox up
	assert_failure 69
	assert_output --partial 'image my-image:2 is not in msb'"'"'s image cache; build it with: forge-sandbox build-image --tag my-image:2'
	run stub_calls
	refute_output --partial create
	# References are compared with Docker's defaults filled in.
	printf '[{"reference":"docker.io/library/my-image:2"}]\n' >"$STUB_DIR/images.out"
	run forge-sandbox up
	assert_success
	write_config '{"sandbox": {"image": "my-image"}}'
	printf '[{"reference":"my-image:latest"}]\n' >"$STUB_DIR/images.out"
	run forge-sandbox up
	assert_success
}

@test "up (stub): msb ls or images output that is not a JSON array of the documented objects: exit 69, nothing created" {
	for answer in '{}' 'garbage' '[1]' '[{"name": 1, "status": "Running"}]' '' 'null'; do
		printf '%s\n' "$answer" >"$STUB_DIR/ls.out"
		run forge-sandbox up
		assert_failure 69
		assert_output --partial 'did not print a JSON array of sandboxes; refusing to guess'
	done
	printf '[]\n' >"$STUB_DIR/ls.out"
	printf '{"reference": "oc-forge-sandbox:latest"}\n' >"$STUB_DIR/images.out"
	run forge-sandbox up
	assert_failure 69
	assert_output --partial 'did not print a JSON array of images'
	run stub_calls
	refute_output --partial create
	# ls --json refuses in the same way.
	printf '{}\n' >"$STUB_DIR/ls.out"
	run forge-sandbox ls --json
	assert_failure 69
}

@test "up (stub): a Running, Stopped or Crashed sandbox is adopted: no image check, no create, cache-disk prep" {
	for state in Running Stopped Crashed; do
		rm -f "$STUB_DIR/calls"
		ls_says "$state"
		run --separate-stderr forge-sandbox up
		assert_success
		assert_output "$NAME"
		[[ $stderr == *"adopting $NAME ($state)"* ]]
		run stub_calls
		assert_output "$(printf '%s\n' doctor 'ls --format json' "$(prep)" "inspect $NAME --format json")"
	done
	# Adoption records the worktree too (a sandbox made before the registry).
	[ "$(forge-state get "$XDG_STATE_HOME/forge/sandboxes/$NAME" worktree)" = "$REPO" ]
}

@test "up (stub): egress, image and resources fixed at create: adopting with others warns to recreate; the same ones are silent" {
	write_config '{"sandbox": {"network": {"allow": ["a.example.com"]}}}'
	run forge-sandbox up
	assert_success
	[ "$(forge-state get "$REPO/.forge/sandbox/$NAME" egress)" = '--net-default deny --net-rule allow@a.example.com' ]
	[ "$(forge-state get "$REPO/.forge/sandbox/$NAME" image)" = oc-forge-sandbox:latest ]
	[ "$(forge-state get "$REPO/.forge/sandbox/$NAME" resources)" = 'cpus=4 memory=8g dockerDisk=16g cacheDisk=16g' ]
	ls_says Running
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr != *differs* ]]
	write_config '{"sandbox": {"network": {"allow": ["a.example.com", "b.example.com"]}}}'
	run --separate-stderr forge-sandbox up
	assert_success
	assert_output "$NAME"
	[[ $stderr == *"warning: $NAME differs from the configuration in what is fixed when a sandbox is created"* ]]
	[[ $stderr == *"recreate it with: forge-sandbox up --recreate (keeps the cache and docker volumes)"* ]]
	[[ $stderr == *'egress: created with: --net-default deny --net-rule allow@a.example.com'* ]]
	[[ $stderr != *'image:'* && $stderr != *'resources:'* ]]
	# The image and the resources too (not only egress).
	printf '[{"reference":"other:2"}]\n' >"$STUB_DIR/images.out"
	write_config '{"sandbox": {"image": "other:2", "resources": {"memory": "4g"}, "network": {"allow": ["a.example.com"]}}}'
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr == *'image: created with: oc-forge-sandbox:latest'*'image: configured:   other:2'* ]]
	[[ $stderr == *'resources: created with: cpus=4 memory=8g dockerDisk=16g cacheDisk=16g'* ]]
	[[ $stderr == *'resources: configured:   cpus=4 memory=4g dockerDisk=16g cacheDisk=16g'* ]]
	[[ $stderr != *'egress:'* && $stderr != *'a disk keeps'* ]]
	# A disk size cannot follow through --recreate: said so.
	write_config '{"sandbox": {"resources": {"cacheDisk": "32g"}, "network": {"allow": ["a.example.com"]}}}'
	run --separate-stderr forge-sandbox up
	[[ $stderr == *'a disk keeps the size its volume was made with'* ]]
}

@test "up --recreate (stub): msb create --replace with the current plan; volumes kept, record renewed" {
	ls_says Running
	write_config '{"sandbox": {"resources": {"memory": "4g"}}}'
	plan_argv
	run --separate-stderr forge-sandbox up --recreate
	assert_success
	assert_output "$NAME"
	[[ $stderr == *"recreating $NAME from oc-forge-sandbox:latest (msb create --replace; the cache and docker volumes are kept)"* ]]
	run stub_calls
	assert_output "$(printf '%s\n' doctor 'ls --format json' 'images --format json' 'volume ls --format json' \
		"${plan[*]:1} --replace" "$(prep)" "inspect $NAME --format json")"
	refute_output --partial 'rm '
	[ "$(forge-state get "$REPO/.forge/sandbox/$NAME" resources)" = 'cpus=4 memory=4g dockerDisk=16g cacheDisk=16g' ]
	# No sandbox yet: a plain create.
	rm "$STUB_DIR/calls" "$STUB_DIR/ls.out"
	run forge-sandbox up --recreate
	assert_success
	run stub_calls
	assert_line --index 3 "${plan[*]:1}"
}

@test "up --recreate (stub): a disk size that differs from the existing volume's is refused (65) before anything is replaced" {
	ls_says Stopped
	printf '[{"name":"%s-docker-data","capacity_bytes":17179869184},{"name":"%s-cache-data","capacity_bytes":17179869184}]\n' \
		"$NAME" "$NAME" >"$STUB_DIR/volume-ls.out"
	run forge-sandbox up --recreate
	assert_success
	write_config '{"sandbox": {"resources": {"cacheDisk": "32g"}}}'
	rm "$STUB_DIR/calls"
	run forge-sandbox up --recreate
	assert_failure 65
	assert_output --partial "configuration key sandbox.resources.cacheDisk: 32g, but the volume $NAME-cache-data keeps the size it was made with (17179869184 bytes)"
	run stub_calls
	refute_output --partial create
	printf '{}\n' >"$STUB_DIR/volume-ls.out"
	run forge-sandbox up --recreate
	assert_failure 69
}

@test "up --restart: usage; --recreate and --restart exclude each other" {
	run forge-sandbox up --recreate --restart
	assert_failure 64
	run forge-sandbox up --reboot
	assert_failure 64
	run forge-sandbox up --help
	assert_success
	assert_output --partial 'forge-sandbox up    [DIR] [--recreate | --restart]'
}

@test "up (stub): Starting is waited for, then adopted; a sandbox that stays Paused fails with 75 after FORGE_SANDBOX_WAIT" {
	ls_says Starting 1
	ls_says Created 2
	ls_says Running 3
	run --separate-stderr forge-sandbox up
	assert_success
	assert_output "$NAME"
	[[ $stderr == *"$NAME is Starting; waiting up to 30s"* ]]
	[ "$(stub_calls | grep -c '^ls ')" -eq 3 ]
	run stub_calls
	refute_output --partial create
	rm -f "$STUB_DIR"/ls.*
	ls_says Paused
	SECONDS=0
	FORGE_SANDBOX_WAIT=1 run forge-sandbox up
	assert_failure 75
	assert_output --partial "$NAME is still Paused after 1s; try again later"
	[ "$SECONDS" -lt 25 ] # not the default wait of 30 s
	FORGE_SANDBOX_WAIT=soon run forge-sandbox up
	assert_failure 64
	# A status msb does not document: refused, not guessed at.
	ls_says Exploded
	run forge-sandbox up
	assert_failure 69
	assert_output --partial "unknown state 'Exploded'"
}

@test "up (stub): a transient sandbox that disappears while waited for is created" {
	ls_says Draining 1
	printf '[]\n' >"$STUB_DIR/ls.out"
	run --separate-stderr forge-sandbox up
	assert_success
	run stub_calls
	assert_line --partial 'create oc-forge-sandbox:latest'
}

@test "up (stub): create says the sandbox already exists: retried once with --replace" {
	printf "error: sandbox already exists: sandbox '%s' already exists; remove it, start the stopped sandbox, or recreate with .replace()\n" "$NAME" >"$STUB_DIR/create.1.err"
	echo 1 >"$STUB_DIR/create.1.rc"
	plan_argv
	run --separate-stderr forge-sandbox up
	assert_success
	assert_output "$NAME"
	run stub_calls
	assert_line --index 3 "${plan[*]:1}"
	assert_line --index 4 "${plan[*]:1} --replace"
	[ "$(stub_calls | grep -c ' --replace$')" -eq 1 ]
	# When the retry fails too, up fails: no third attempt.
	rm -f "$STUB_DIR/calls" "$STUB_DIR/create.count"
	cp "$STUB_DIR/create.1.err" "$STUB_DIR/create.err"
	echo 1 >"$STUB_DIR/create.rc"
	run forge-sandbox up
	assert_failure 69
	[ "$(stub_calls | grep -c '^create ')" -eq 2 ]
}

@test "up (stub): create fails otherwise: msb's message, exit 69, no retry; msb rejecting the arguments is 70" {
	printf 'error: failed to start "%s"\n  → other: sandbox process exited\n' "$NAME" >"$STUB_DIR/create.err"
	echo 1 >"$STUB_DIR/create.rc"
	run forge-sandbox up
	assert_failure 69
	assert_output --partial "error: failed to start \"$NAME\""
	assert_output --partial "msb could not create $NAME (exit 1)"
	[ "$(stub_calls | grep -c '^create ')" -eq 1 ]
	run stub_calls
	refute_output --partial 'exec '
	echo 2 >"$STUB_DIR/create.rc"
	run forge-sandbox up
	assert_failure 70
}

@test "up (stub): the cache-disk preparation failing fails up" {
	ls_says Running
	echo 'sudo: a password is required' >"$STUB_DIR/prep.err"
	echo 1 >"$STUB_DIR/prep.rc"
	run --separate-stderr forge-sandbox up
	assert_failure 69
	[ -z "$output" ]
	[[ $stderr == *'sudo: a password is required'* ]]
	[[ $stderr == *"could not prepare the cache disk of $NAME"* ]]
}

@test "up (stub): secrets converge: --secret for each configured one, --secret-rm for stale ones, a new name at the next start" {
	export TOKEN=t NEW_TOKEN=n
	ls_says Running
	write_config '{"sandbox": {"network": {"secrets": [{"env": "TOKEN", "hosts": ["api.example.com"]}]}}}'
	# Configured, not bound: a new name, bound from the next start; the
	# running sandbox is not rebooted, and up says how to.
	bound
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr == *"new secrets (TOKEN) are bound to $NAME from its next start; to reboot it now run: forge-sandbox up --restart"* ]]
	run stub_calls
	assert_line --index 4 "modify $NAME --secret TOKEN@api.example.com --next-start"
	refute_output --partial -- --restart
	# Asked for: a reboot.
	rm "$STUB_DIR/calls"
	run --separate-stderr forge-sandbox up --restart
	assert_success
	[[ $stderr != *'next start'* ]]
	run stub_calls
	assert_line --index 4 "modify $NAME --secret TOKEN@api.example.com --restart"
	# Configured and bound: refreshed, no restart.
	rm "$STUB_DIR/calls"
	bound TOKEN
	run forge-sandbox up
	assert_success
	run stub_calls
	assert_line --index 4 "modify $NAME --secret TOKEN@api.example.com"
	# A new one and a stale one.
	rm "$STUB_DIR/calls"
	bound TOKEN OLD_TOKEN
	write_config '{"sandbox": {"network": {"secrets": [{"env": "TOKEN", "hosts": ["api.example.com"]}, {"env": "NEW_TOKEN", "hosts": ["new.example.com", "new2.example.com"]}]}}}'
	run forge-sandbox up
	assert_success
	run stub_calls
	assert_line --index 4 "modify $NAME --secret TOKEN@api.example.com --secret NEW_TOKEN@new.example.com,new2.example.com --secret-rm OLD_TOKEN --next-start"
	# Only stale ones: removed, no restart.
	rm "$STUB_DIR/calls"
	write_config '{}'
	run forge-sandbox up
	assert_success
	run stub_calls
	assert_line --index 4 "modify $NAME --secret-rm TOKEN --secret-rm OLD_TOKEN"
	# Nothing bound, nothing configured: no modify; unless a reboot is asked for.
	rm "$STUB_DIR/calls"
	bound
	run forge-sandbox up
	assert_success
	run stub_calls
	refute_output --partial modify
	rm "$STUB_DIR/calls"
	run forge-sandbox up --restart
	assert_success
	run stub_calls
	assert_line --index 4 "modify $NAME --restart"
	# A Stopped sandbox: the new name applies at its next start, nothing to say.
	ls_says Stopped
	write_config '{"sandbox": {"network": {"secrets": [{"env": "TOKEN", "hosts": ["api.example.com"]}]}}}'
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr != *'next start'* ]]
	# A failing modify fails up.
	bound OLD_TOKEN
	echo 1 >"$STUB_DIR/modify.rc"
	run forge-sandbox up
	assert_failure 69
	assert_output --partial "could not update the secrets of $NAME"
	# msb inspect answering nonsense: refused.
	echo '[]' >"$STUB_DIR/inspect.out"
	run forge-sandbox up
	assert_failure 69
	assert_output --partial 'refusing to guess'
}

@test "up and plan (stub): a configured secret whose host variable is unset: warned about before any msb call" {
	unset MISSING_TOKEN
	write_config '{"sandbox": {"network": {"secrets": [{"env": "MISSING_TOKEN", "hosts": ["api.example.com"]}]}}}'
	want="warning: secret MISSING_TOKEN: the host variable MISSING_TOKEN is not set; export it in the environment that starts the harness"
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr == *"$want"* ]]
	run --separate-stderr forge-sandbox plan
	assert_success
	[[ $stderr == *"$want"* ]]
	# Before msb is asked anything: here msb's very first answer (doctor) stops up.
	printf 'error: CPU virtualization is not available\n' >"$STUB_DIR/doctor.err"
	echo 1 >"$STUB_DIR/doctor.rc"
	run --separate-stderr forge-sandbox up
	assert_failure 69
	[[ $stderr == *"$want"*"host unsupported"* ]]
}

@test "up/exec (stub): secret values never appear in an argv, the output or a file forge writes" {
	export API_TOKEN='SUPERSECRET-4c7e' FORGE_T_ENV='ENVVALUE-9d2a'
	write_config '{"sandbox": {"network": {"env": ["FORGE_T_ENV"], "secrets": [{"env": "API_TOKEN", "hosts": ["api.example.com"]}]}}}'
	run forge-sandbox up
	assert_success
	run forge-sandbox plan --json
	assert_success
	ls_says Running
	run forge-sandbox exec -- true
	assert_success
	run grep -rl -e SUPERSECRET -e ENVVALUE "$STUB_DIR" "$REPO/.forge" "$XDG_STATE_HOME"
	assert_failure 1
	run stub_calls
	assert_line --partial -- '--secret API_TOKEN@api.example.com'
	assert_line --partial -- '-e FORGE_T_ENV'
}

@test "up (stub): doctor says the host is unsupported: 69 with msb's explanation and the --fix hint, nothing else run" {
	cat >"$STUB_DIR/doctor.err" <<'EOF'
info Platform: Linux x86_64
   ✗ CPU virt     not found
error: CPU virtualization is not available
  → no vmx (Intel) or svm (AMD) flag in /proc/cpuinfo
  → enable virtualization (VT-x / AMD-V) in your BIOS or UEFI firmware
EOF
	echo 1 >"$STUB_DIR/doctor.rc"
	run forge-sandbox up
	assert_failure 69
	assert_output --partial 'host unsupported: msb cannot run microVMs here (msb doctor exited 1)'
	assert_output --partial 'error: CPU virtualization is not available'
	assert_output --partial '→ enable virtualization (VT-x / AMD-V)'
	assert_output --partial 'CPU virt     not found'
	assert_output --partial "msb doctor --fix"
	refute_output --partial 'info Platform'
	run stub_calls
	assert_output doctor
}

@test "up (stub): doctor gives no answer within the bound: logged as indeterminate, up goes on" {
	echo 30 >"$STUB_DIR/doctor.sleep"
	SECONDS=0
	FORGE_SANDBOX_DOCTOR_TIMEOUT=1 run --separate-stderr forge-sandbox up
	assert_success
	assert_output "$NAME"
	[[ $stderr == *'msb doctor gave no answer within 1s: host support is indeterminate; going on'* ]]
	[ "$SECONDS" -lt 25 ] # not the doctor's 30 s
}

@test "doctor (stub): available exits 0; unsupported 69; no answer within the bound 75" {
	run --separate-stderr forge-sandbox doctor
	assert_success
	assert_output "available: $FORGE_MSB can run microVMs on this host"
	printf 'error: KVM is not available\n  → load the kvm module\n' >"$STUB_DIR/doctor.err"
	echo 1 >"$STUB_DIR/doctor.rc"
	run --separate-stderr forge-sandbox doctor
	assert_failure 69
	[[ $stderr == *'error: KVM is not available'*'→ load the kvm module'*'msb doctor --fix'* ]]
	rm "$STUB_DIR/doctor.rc"
	echo 30 >"$STUB_DIR/doctor.sleep"
	SECONDS=0
	FORGE_SANDBOX_DOCTOR_TIMEOUT=1 run forge-sandbox doctor
	assert_failure 75
	assert_output --partial 'msb doctor gave no answer within 1s'
	[ "$SECONDS" -lt 25 ] # not the doctor's 30 s
}

@test "doctor, up, exec, ls, rm, prune: msb not found is 69 with the install hint" {
	unset FORGE_MSB
	export PATH="$abs_top_builddir/bin:$abs_top_builddir/helpers:/usr/bin:/bin"
	run ! command -v msb
	for cmd in doctor up ls rm prune 'exec -- true'; do
		# shellcheck disable=SC2086
		run forge-sandbox $cmd
		assert_failure 69
		assert_output --partial 'msb not found'
		assert_output --partial 'npm install @superradcompany/microsandbox-linux-x64-gnu@0.6.18'
		assert_output --partial 'FORGE_MSB='
	done
	FORGE_MSB=$SCRATCH/not-there run forge-sandbox doctor
	assert_failure 69
	assert_output --partial "FORGE_MSB=$SCRATCH/not-there is not an executable file"
}

@test "exec (stub): msb exec --quiet NAME --no-tty -w <physical cwd> -- COMMAND..., arguments verbatim, status passed through" {
	ls_says Running
	mkdir -p "$REPO/sub dir"
	ln -s "$REPO/sub dir" "$SCRATCH/link"
	cd "$SCRATCH/link"
	run forge-sandbox exec -- printf '[%s]' 'a b' '$(touch pwned)' '*' '' "c'd" --help
	assert_success
	assert_output "[a b][\$(touch pwned)][*][][c'd][--help]"
	[ ! -e pwned ]
	stub_call 2
	expected=(exec --quiet "$NAME" --no-tty -w "$REPO/sub dir" -- printf '[%s]' 'a b' '$(touch pwned)' '*' '' "c'd" --help)
	[ "${argv[*]}" = "${expected[*]}" ]
	[ "${#argv[@]}" -eq "${#expected[@]}" ]
	for code in 0 1 3 42 255; do
		run forge-sandbox exec -- sh -c "exit $code"
		[ "$status" -eq "$code" ]
	done
	# msb's own failures too (a sandbox that cannot start, a missing program).
	echo 127 >"$STUB_DIR/exec.rc"
	run -127 forge-sandbox exec -- no-such-program
	assert_failure 127
	# DIR names the worktree; the command still runs in the current directory.
	rm "$STUB_DIR/exec.rc" "$STUB_DIR/calls"
	cd "$SCRATCH"
	run forge-sandbox exec "$REPO" -- true
	assert_success
	run stub_calls
	assert_output "$(printf '%s\n' 'ls --format json' "exec --quiet $NAME --no-tty -w $SCRATCH -- true")"
}

@test "exec (stub) without a sandbox: forge's own message naming forge-sandbox up, 69, never msb's bare 'sandbox not found'; msb exec not called" {
	printf 'error: sandbox not found: %s\n' "$NAME" >"$STUB_DIR/exec.err"
	echo 1 >"$STUB_DIR/exec.rc"
	run --separate-stderr forge-sandbox exec -- touch "$REPO/ran"
	assert_failure 69
	[ "$stderr" = "forge-sandbox: error: no sandbox for $REPO ($NAME); start it with: forge-sandbox up $REPO" ]
	[ ! -e "$REPO/ran" ]
	run stub_calls
	assert_output 'ls --format json'
	# A stopped one is there (msb starts it in place).
	rm "$STUB_DIR/exec.err" "$STUB_DIR/exec.rc"
	ls_says Stopped
	run forge-sandbox exec -- true
	assert_success
}

@test "exec (stub) from a directory outside the sandbox's mounts (recorded at create): 126 naming it, msb exec not called" {
	forge-sandbox up >/dev/null 2>&1
	[ "$(forge-state get "$XDG_STATE_HOME/forge/sandboxes/$NAME" mounts)" = "$REPO:$REPO/.git/hooks:$REPO/.forge:$TMPDIR/opencode" ]
	ls_says Running
	rm "$STUB_DIR/calls"
	mkdir -p "$SCRATCH/outside"
	cd "$SCRATCH/outside"
	run --separate-stderr forge-sandbox exec "$REPO" -- true
	assert_failure 126
	[[ $stderr == "forge-sandbox: error: $SCRATCH/outside is outside the sandbox $NAME: it sees the host only at its mounts (the worktree $REPO and "* ]]
	run stub_calls
	assert_output 'ls --format json'
	cd "$TMPDIR/opencode"
	run forge-sandbox exec "$REPO" -- pwd
	assert_output "$TMPDIR/opencode"
}

@test "rm (stub) of a worktree that never had a sandbox: says there is none, exit 0; one that had: removed" {
	echo 1 >"$STUB_DIR/rm.rc"
	echo 1 >"$STUB_DIR/volume-rm.rc"
	run --separate-stderr forge-sandbox rm
	assert_success
	[ "$stderr" = "forge-sandbox: no sandbox for $REPO ($NAME); nothing to remove" ]
	# Only its volumes were left: said so.
	printf '[{"name": "%s-cache-data"}]\n' "$NAME" >"$STUB_DIR/volume-ls.out"
	echo 0 >"$STUB_DIR/volume-rm.4.rc"
	run --separate-stderr forge-sandbox rm
	assert_success
	[ "$stderr" = "forge-sandbox: no sandbox $NAME for $REPO; removed the volumes it left" ]
	rm "$STUB_DIR/rm.rc" "$STUB_DIR/volume-rm.rc" "$STUB_DIR/volume-ls.out"
	run --separate-stderr forge-sandbox rm
	assert_success
	[ "$stderr" = "forge-sandbox: removed $NAME" ]
}

@test "up (stub): a changed sandbox.network.env list is drift (fixed at create), warned as for the allow-list" {
	export FORGE_T_A=a FORGE_T_B=b
	write_config '{"sandbox": {"network": {"env": ["FORGE_T_A"]}}}'
	run forge-sandbox up
	assert_success
	[ "$(forge-state get "$REPO/.forge/sandbox/$NAME" env)" = FORGE_T_A ]
	ls_says Running
	run --separate-stderr forge-sandbox up
	[[ $stderr != *differs* ]]
	write_config '{"sandbox": {"network": {"env": ["FORGE_T_B", "FORGE_T_A"]}}}'
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr == *"warning: $NAME differs from the configuration in what is fixed when a sandbox is created"* ]]
	[[ $stderr == *'env: created with: FORGE_T_A'*'env: configured:   FORGE_T_B FORGE_T_A'* ]]
	# msb's secrets are converged at up (msb modify), not drift (their
	# hosts join the allow-list, which is).
	export TOKEN=x
	write_config '{"sandbox": {"network": {"env": ["FORGE_T_A"], "secrets": [{"env": "TOKEN", "hosts": ["api.example.com"]}]}}}'
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr != *'env:'* ]]
	[[ $stderr != *'secrets:'* ]]
	[[ $stderr == *'new secrets (TOKEN) are bound to'* ]]
}

@test "exec (stub) runs under dash and busybox sh" {
	ls_says Running
	for shell in dash 'busybox sh'; do
		command -v "${shell%% *}" >/dev/null || { [ "${CI:-}" != true ] || fail "$shell missing"; continue; }
		run $shell "$abs_top_builddir/bin/forge-sandbox" exec -- sh -c 'echo "$1"; exit 5' _ 'x y'
		assert_failure 5
		assert_output 'x y'
	done
}

@test "rm (stub): the record is never removed through a symlinked .forge" {
	mkdir -p "$SCRATCH/elsewhere/sandbox"
	touch "$SCRATCH/elsewhere/sandbox/$NAME" "$SCRATCH/elsewhere/sandbox/$NAME.lock"
	ln -s "$SCRATCH/elsewhere" .forge
	run forge-sandbox rm
	assert_success
	[ -f "$SCRATCH/elsewhere/sandbox/$NAME" ]
	[ -f "$SCRATCH/elsewhere/sandbox/$NAME.lock" ]
	# A real .forge: removed.
	rm .forge
	mkdir -p .forge/sandbox
	touch ".forge/sandbox/$NAME"
	run forge-sandbox rm
	assert_success
	[ ! -e ".forge/sandbox/$NAME" ]
}

@test "up (stub): the create record is never written through a symlinked .forge/sandbox" {
	mkdir -p "$SCRATCH/elsewhere" .forge
	ln -s "$SCRATCH/elsewhere" .forge/sandbox
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr == *"warning: cannot record what $NAME is created with"* ]]
	[ -z "$(ls -A "$SCRATCH/elsewhere")" ]
	# Nor through a symlinked record or lock.
	rm .forge/sandbox
	mkdir .forge/sandbox
	ln -s "$SCRATCH/elsewhere/target" ".forge/sandbox/$NAME.lock"
	run --separate-stderr forge-sandbox up
	[[ $stderr == *"warning: cannot record what $NAME is created with"* ]]
	[ ! -e "$SCRATCH/elsewhere/target" ]
}

@test "rm (stub): the sandbox cannot be removed: volumes left alone, exit 69; missing sandbox and volumes are not errors" {
	ls_says Running
	echo 'error: permission denied' >"$STUB_DIR/rm.err"
	echo 1 >"$STUB_DIR/rm.rc"
	run forge-sandbox rm
	assert_failure 69
	assert_output --partial 'error: permission denied'
	assert_output --partial "could not remove sandbox $NAME; its volumes are left alone"
	run stub_calls
	assert_output "$(printf '%s\n' "rm --force $NAME --quiet" 'ls --format json')"
	# msb rm --quiet fails silently for a missing sandbox, msb volume rm
	# --quiet for a missing volume: checked against ls, not an error.
	rm "$STUB_DIR/calls" "$STUB_DIR/rm.err"
	printf '[]\n' >"$STUB_DIR/ls.out"
	echo 1 >"$STUB_DIR/volume-rm.rc"
	run forge-sandbox rm
	assert_success
	run stub_calls
	assert_output "$(printf '%s\n' "rm --force $NAME --quiet" 'ls --format json' "volume rm $NAME-docker-data --quiet" \
		'volume ls --format json' "volume rm $NAME-cache-data --quiet" 'volume ls --format json')"
	# A volume that cannot be removed for another reason: exit 69.
	echo "error: volume in use" >"$STUB_DIR/volume-rm.err"
	printf '[{"name": "%s-docker-data"}, {"name": "%s-cache-data"}]\n' "$NAME" "$NAME" >"$STUB_DIR/volume-ls.out"
	run forge-sandbox rm
	assert_failure 69
	assert_output --partial 'error: volume in use'
	assert_output --partial "could not remove volume $NAME-docker-data"
}

@test "up (stub) works under dash" {
	command -v dash >/dev/null || skip 'dash not installed'
	export TOKEN=x
	write_config '{"sandbox": {"network": {"allow": ["x.example.com"], "secrets": [{"env": "TOKEN", "hosts": ["api.example.com"]}]}}}'
	run --separate-stderr dash "$abs_top_builddir/bin/forge-sandbox" up
	assert_success
	assert_output "$NAME"
	run stub_calls
	assert_line --index 6 "modify $NAME --secret TOKEN@api.example.com --next-start"
}
