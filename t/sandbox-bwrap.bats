#!/usr/bin/env bats
# The namespace backend (SPEC 4.5) with REAL sandboxes on this machine:
# bubblewrap, forge-sandbox-init as PID 1, forge-shell's exec-socket client,
# the seccomp filter and cgroups. No stub anywhere: every test starts a real
# sandbox with `rootfs: host` (no Docker needed) and removes it.
load test_helper
load sandbox_helper
load container-fixtures/docker

setup() { bwrap_setup; }

teardown() {
	# Whatever a test left running goes with the sandbox.
	[ -z "${REPO:-}" ] || forge-sandbox rm "$REPO" >/dev/null 2>&1 || :
	[ -z "${NOBODY_REPO:-}" ] || as_nobody forge-sandbox rm "$NOBODY_REPO" >/dev/null 2>&1 || :
	[ -z "${OWNER_REPO:-}" ] || forge-sandbox rm "$OWNER_REPO" >/dev/null 2>&1 || :
	[ -z "${LINKED:-}" ] || forge-sandbox rm "$LINKED" >/dev/null 2>&1 || :
	[ -z "${OWNER:-}" ] || userdel "$OWNER" 2>/dev/null || :
	[ -z "${IMAGE_TAG:-}" ] || docker rmi "$IMAGE_TAG" >/dev/null 2>&1 || :
	docker_unlock
	forge_test_teardown
}

@test "up starts a namespace sandbox that outlives it; exec returns statuses verbatim: 0, 42, 126, 127, 143" {
	run --separate-stderr forge-sandbox up
	assert_success
	assert_output "$NAME"
	alive "$(init_pid)"
	run in_sandbox true
	assert_success
	run in_sandbox sh -c 'exit 42'
	assert_failure 42
	run in_sandbox no-such-command-here
	assert_failure 127
	printf 'echo hi\n' >"$REPO/not-executable"
	run in_sandbox ./not-executable
	assert_failure 126
	run in_sandbox sh -c 'kill -TERM $$'
	assert_failure 143
}

@test "inside: uid 1000, the same physical cwd, files written belong to the invoker on the host" {
	forge-sandbox up >/dev/null
	mkdir -p "$REPO/sub dir"
	ln -s "$REPO/sub dir" "$SCRATCH/link"
	cd "$SCRATCH/link"
	run in_sandbox pwd -P
	assert_output "$REPO/sub dir"
	run in_sandbox id -u
	assert_output 1000
	run in_sandbox sh -c 'echo made inside >written'
	assert_success
	[ "$(cat "$REPO/sub dir/written")" = 'made inside' ]
	[ "$(stat -c %u "$REPO/sub dir/written")" = "$(id -u)" ]
}

@test "hooks, the repository's config and read-only custom mounts are read-only inside (EROFS); a missing hooks folder too" {
	mkdir -p "$SCRATCH/ro-data"
	echo data >"$SCRATCH/ro-data/file"
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "mounts": [{"host": "'"$SCRATCH/ro-data"'"}]}}'
	forge-sandbox up >/dev/null
	run in_sandbox sh -c 'echo x >.git/hooks/pre-commit'
	assert_failure
	assert_output --partial 'Read-only file system'
	[ ! -e "$REPO/.git/hooks/pre-commit" ]
	run in_sandbox git config core.hooksPath /tmp
	assert_failure
	run git config core.hooksPath
	assert_failure
	run in_sandbox cat "$SCRATCH/ro-data/file"
	assert_output data
	run in_sandbox sh -c "echo x >'$SCRATCH/ro-data/file'"
	assert_output --partial 'Read-only file system'
	# The worktree itself stays writable.
	run in_sandbox touch "$REPO/ok"
	assert_success
	forge-sandbox rm >/dev/null
	rm -rf "$REPO/.git/hooks"
	forge-sandbox up >/dev/null
	run in_sandbox sh -c 'mkdir -p .git/hooks && echo x >.git/hooks/post-checkout'
	assert_failure
	[ ! -e "$REPO/.git/hooks/post-checkout" ]
}

@test "nothing else of the host is visible: a host file outside the mounts, the host HOME, shadow, /root" {
	echo secret >"$SCRATCH/outside"
	echo token >"$HOME/.host-token"
	forge-sandbox up >/dev/null
	run in_sandbox test -e "$SCRATCH/outside"
	assert_failure
	run in_sandbox test -e "$HOME/.host-token"
	assert_failure
	run in_sandbox test -e /etc/shadow
	assert_failure
	run in_sandbox test -e /etc/ssl/private
	assert_failure
	run in_sandbox test -e /etc/sudoers
	assert_failure
	# Certificates are there, for TLS.
	run in_sandbox test -d /etc/ssl/certs
	assert_success
	run in_sandbox ls /root
	assert_failure
	run in_sandbox sh -c 'echo "$HOME"'
	assert_output /opt/forge
	run in_sandbox test -e /sys/class
	assert_failure
	# No host network: only lo.
	run in_sandbox cat /proc/net/dev
	refute_output --partial eth
}

@test "forge's state inside a writable mount: up and forge-verify --sandbox refuse (73) naming both paths; no sandbox, no state, no false PASS" {
	export XDG_STATE_HOME=$REPO/.state
	run --separate-stderr forge-sandbox up
	assert_failure 73
	[[ $stderr == *"cannot mount $REPO read-write: it holds the state folder of sandbox $NAME (its exec socket and env file), $REPO/.state/forge/bwrap/$NAME, which no sandbox may write"* ]]
	[ ! -e "$REPO/.state" ]
	run --separate-stderr forge-verify --sandbox -- sh -c 'exit 1'
	[ "$status" -ne 0 ]
	[[ $output != *"Verdict: PASS"* ]]
	[[ $stderr == *"it holds the state folder of sandbox $NAME"* ]]
	[ ! -e "$REPO/.state/forge/bwrap" ]
	run pgrep -f -- "$REPO/.state"
	assert_failure
	run pgrep -f -- "^bwrap .*--hostname $NAME "
	assert_failure
}

@test "up writes bwrap's options afresh: a symbolic link left as bwrap.args in the state folder is never written through" {
	forge-sandbox up >/dev/null
	forge-sandbox rm >/dev/null
	mkdir -p "$STATE"
	echo host >"$SCRATCH/host-file"
	ln -s "$SCRATCH/host-file" "$STATE/bwrap.args"
	run forge-sandbox up
	assert_success
	run cat "$SCRATCH/host-file"
	assert_output host
	run in_sandbox true
	assert_success
	[ ! -e "$STATE/bwrap.args" ]
}

@test "a background process and /tmp survive between execs; rm leaves no process and no state" {
	forge-sandbox up >/dev/null
	# The marker is made inside, so only the sandboxed sleep carries it.
	run in_sandbox sh -c 'echo kept >/tmp/note; n=3517; setsid sleep $n.25 >/dev/null 2>&1 </dev/null &'
	assert_success
	run in_sandbox cat /tmp/note
	assert_output kept
	run in_sandbox sh -c 'ps -eo args 2>/dev/null || cat /proc/[0-9]*/cmdline | tr "\0" " "'
	assert_output --partial 'sleep 3517.25'
	running_with 'sleep 3517.25'
	pid=$(init_pid)
	run forge-sandbox rm
	assert_success
	run alive "$pid"
	assert_failure
	run running_with 'sleep 3517.25'
	assert_failure
	[ ! -e "$STATE" ]
	# The name is no namespace sandbox any more: forge-shell does not reach it.
	FORGE_SANDBOX_CONTAINER=$NAME FORGE_MSB=/nonexistent/msb run forge-shell -c true
	assert_failure 127
}

@test "seccomp and namespaces: unshare, mount and a nested user namespace are denied" {
	forge-sandbox up >/dev/null
	run in_sandbox unshare -U true
	assert_failure
	assert_output --partial 'Operation not permitted'
	run in_sandbox unshare -n true
	assert_failure
	run in_sandbox sh -c 'grep -E "^(Seccomp|NoNewPrivs):" /proc/self/status'
	assert_line --regexp '^Seccomp:[[:space:]]+2$'
	assert_line --regexp '^NoNewPrivs:[[:space:]]+1$'
}

@test "the seccomp filter: io_uring, keys, bpf, perf, namespaces, mount and TIOCSTI denied; clone3 is ENOSYS; fork works" {
	forge-sandbox up >/dev/null
	# The build tree is not mounted: the probe goes into the worktree.
	cp "$abs_top_builddir/t/seccomp-probe" "$REPO/"
	run in_sandbox ./seccomp-probe </dev/null
	assert_success
	for call in io_uring_setup keyctl add_key request_key bpf perf_event_open unshare-user unshare-mount \
		clone-newnet clone-newuser mount ioctl-tiocsti ioctl-tiocsti-high; do
		assert_line "$call EPERM"
	done
	assert_line 'clone3 ENOSYS'
	assert_line 'plain-fork allowed'
}

@test "memory limit: a command above sandbox.resources.memory is killed (137)" {
	[ "$(id -u)" = 0 ] || skip "needs a writable cgroup: the unprivileged test checks the warning"
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "resources": {"memory": "64m", "cpus": 1}}}'
	forge-sandbox up >/dev/null
	run in_sandbox dd if=/dev/zero of=/dev/null bs=200M count=1
	assert_failure 137
	run in_sandbox dd if=/dev/zero of=/dev/null bs=1M count=1
	assert_success
	run in_sandbox nproc
	assert_output 1
}

@test "forge-shell routes to the namespace sandbox by its state folder, with bash and the configured env names only" {
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"env": ["FORGE_T_PASSED"]}}}'
	FORGE_T_PASSED=at-up forge-sandbox up >/dev/null
	eval "$(forge-sandbox env)"
	# The values are those of each exec.
	FORGE_T_PASSED=yes FORGE_T_OTHER=no run forge-shell -c 'echo "$FORGE_SANDBOX_BACKEND ${FORGE_T_PASSED:-unset} ${FORGE_T_OTHER:-unset} $(id -u)"; exit 3'
	assert_failure 3
	assert_output 'bwrap yes unset 1000'
	# stdin passes through as a file descriptor.
	run forge-shell -c 'tr a-z A-Z' <<<'piped in'
	assert_output 'PIPED IN'
	# A directory the sandbox does not have: refused, not run elsewhere.
	cd "$HOME"
	run forge-shell -c 'pwd'
	assert_failure 126
	assert_output --partial 'cannot change to'
}

@test "signals: a command inside starts with no signal ignored or blocked, so an interrupt forge-shell forwards stops it" {
	forge-sandbox up >/dev/null
	export FORGE_SANDBOX_CONTAINER=$NAME
	# The sandbox is started from a background job (SIGINT and SIGQUIT
	# ignored there); its commands must not inherit that.
	run forge-shell -c 'grep -E "^Sig(Ign|Blk):" /proc/self/status'
	assert_success
	assert_line --index 0 $'SigBlk:\t0000000000000000'
	assert_line --index 1 $'SigIgn:\t0000000000000000'
	forge-shell -c 'n=4714; sleep $n.5' &
	client=$!
	for _ in $(seq 50); do running_with 'sleep 4714.5' && break; sleep 0.1; done
	running_with 'sleep 4714.5'
	kill -INT "$client"
	status=0
	wait "$client" || status=$?
	[ "$status" = 130 ]
}

@test "signals: TERM to forge-shell reaches the command; a killed client takes its command's group along" {
	forge-sandbox up >/dev/null
	export FORGE_SANDBOX_CONTAINER=$NAME
	# Markers made inside: only the sandboxed sleep carries them, not the client.
	forge-shell -c 'trap "exit 7" TERM; n=4711; sleep $n.5 & wait' &
	client=$!
	for _ in $(seq 50); do running_with 'sleep 4711.5' && break; sleep 0.1; done
	kill -TERM "$client"
	status=0
	wait "$client" || status=$?
	[ "$status" = 7 ]

	forge-shell -c 'n=4712; sleep $n.5' &
	client=$!
	for _ in $(seq 50); do running_with 'sleep 4712.5' && break; sleep 0.1; done
	running_with 'sleep 4712.5'
	kill -KILL "$client"
	wait "$client" || :
	for _ in $(seq 50); do running_with 'sleep 4712.5' || break; sleep 0.1; done
	run running_with 'sleep 4712.5'
	assert_failure

	# --exec-kill-group: nothing of the command outlives it.
	run forge-shell --exec-kill-group sh -c 'n=4713; sleep $n.5 >/dev/null 2>&1 </dev/null &'
	assert_success
	sleep 0.2
	run running_with 'sleep 4713.5'
	assert_failure
}

@test "plan: the bwrap argv with --backend bwrap or sandbox.backend bwrap, msb's with --backend msb; auto follows msb doctor" {
	run --separate-stderr forge-sandbox plan
	assert_success
	assert_line --index 0 bwrap
	assert_line "$REPO"
	assert_line --regexp '^--seccomp$'
	assert_line --new-session
	run --separate-stderr forge-sandbox plan --backend msb
	assert_success
	assert_line --index 0 msb
	user_config '{"sandbox": {"bwrap": {"rootfs": "host"}}}'
	run --separate-stderr forge-sandbox plan
	assert_success
	if msb doctor >/dev/null 2>&1; then
		assert_line --index 0 msb
	else
		assert_line --index 0 bwrap
	fi
	run forge-sandbox plan --backend vm
	assert_failure 64
	user_config '{"sandbox": {"backend": "vm"}}'
	run forge-sandbox plan
	assert_failure 65
	assert_output --partial 'sandbox.backend'
}

@test "doctor names both backends and exits 0 when the selected one is available" {
	run forge-sandbox doctor
	assert_success
	assert_line --partial 'forge-sandbox: bwrap: available: namespace sandboxes work on this host'
	assert_line 'forge-sandbox: sandbox.backend: bwrap'
	user_config '{"sandbox": {"backend": "msb"}}'
	run forge-sandbox doctor
	if msb doctor >/dev/null 2>&1; then assert_success; else assert_failure 69; fi
	assert_line --partial 'forge-sandbox: bwrap: available'
}

@test "doctor with auto on a host without microVMs: says bwrap is selected and why; msb's state is information, not an error (msb's doctor answered by the test double)" {
	use_stub
	echo 1 >"$STUB_DIR/doctor.rc"
	user_config '{"sandbox": {"bwrap": {"rootfs": "host"}}}'
	run forge-sandbox doctor
	assert_success
	assert_line --partial 'forge-sandbox: msb: unavailable: it cannot run microVMs on this host'
	assert_line 'forge-sandbox: selected: bwrap (namespace sandboxes): auto picks it because msb cannot run microVMs here'
	refute_output --partial 'error:'
	refute_output --partial 'msb doctor --fix'
	# With msb selected, its failure is the error it is.
	user_config '{"sandbox": {"backend": "msb"}}'
	run forge-sandbox doctor
	assert_failure 69
	assert_output --partial 'forge-sandbox: error: host unsupported'
	assert_line 'forge-sandbox: selected: none: sandbox.backend is msb, which cannot run here'
}

@test "ls lists namespace sandboxes with their backend; up --recreate keeps the cache, drops /tmp; prune removes one whose worktree is gone" {
	forge-sandbox up >/dev/null
	run forge-sandbox ls --json
	assert_success
	[ "$(jq -r --arg n "$NAME" '.[] | select(.name == $n) | "\(.backend) \(.status) \(.worktree) \(.image)"' <<<"$output")" = "bwrap running $REPO host" ]
	run forge-sandbox ls
	assert_line "$NAME  running  $REPO  bwrap"
	run in_sandbox sh -c 'echo c >/opt/forge/.cache/kept; echo t >/tmp/dropped'
	assert_success
	run --separate-stderr forge-sandbox up
	assert_success
	assert_output "$NAME"
	[[ $stderr == *"adopting $NAME (running)"* ]]
	run forge-sandbox up --recreate
	assert_success
	run in_sandbox cat /opt/forge/.cache/kept
	assert_output c
	run in_sandbox test -e /tmp/dropped
	assert_failure
	pid=$(init_pid)
	mv "$REPO" "$SCRATCH/moved"
	run forge-sandbox prune
	assert_success
	assert_output "$NAME"
	run alive "$pid"
	assert_failure
	[ ! -e "$STATE" ]
	REPO=
}

@test "an unprivileged user: up, exec, ownership, limits warned about, rm" {
	[ "$(id -u)" = 0 ] || skip "needs root to become the unprivileged user nobody"
	chmod 755 "$SCRATCH"
	mkdir -p "$SCRATCH/nobody/.config/forge" "$SCRATCH/nobody/tmp"
	cp "$XDG_CONFIG_HOME/forge/config.json" "$SCRATCH/nobody/.config/forge/"
	make_repo "$SCRATCH/nobody/repo"
	chown -R 65534:65534 "$SCRATCH/nobody"
	NOBODY_REPO=$SCRATCH/nobody/repo
	# An allow-list: open egress also needs /dev/net/tun open to nobody,
	# which depends on the host (t/sandbox-net.bats tests egress).
	printf '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"allow": ["example.com"]}}}\n' \
		>"$SCRATCH/nobody/.config/forge/config.json"
	run --separate-stderr as_nobody forge-sandbox up "$NOBODY_REPO"
	echo "$stderr"
	assert_success
	[[ $stderr == *'no writable cgroup'* ]]
	cd "$NOBODY_REPO"
	run as_nobody forge-sandbox exec -- sh -c 'id -u; echo hi >by-agent'
	assert_success
	assert_output 1000
	[ "$(stat -c %u "$NOBODY_REPO/by-agent")" = 65534 ]
	run as_nobody forge-sandbox exec -- sh -c 'echo x >.git/hooks/pre-push'
	assert_failure
	run as_nobody forge-sandbox exec -- unshare -U true
	assert_failure
	pid=$(cut -d' ' -f1 "$SCRATCH/nobody/.local/state/forge/bwrap/$(expected_name "$NOBODY_REPO")/pid")
	run as_nobody forge-sandbox rm "$NOBODY_REPO"
	assert_success
	run alive "$pid"
	assert_failure
}

@test "root starting another user's worktree: the sandbox runs as that owner, with its folders in the owner's home" {
	[ "$(id -u)" = 0 ] || skip "needs root"
	owner_worktree "forge-t$$"
	owner_name=$(expected_name "$OWNER_REPO")
	run --separate-stderr forge-sandbox up "$OWNER_REPO"
	assert_success
	cd "$OWNER_REPO"
	run forge-sandbox exec -- sh -c 'id -u; echo x >by-owner'
	assert_success
	assert_output 1000
	[ "$(stat -c %U "$OWNER_REPO/by-owner")" = "$OWNER" ]
	# Its init is the owner's process on the host, not root's.
	pid=$(cut -d' ' -f1 "$XDG_STATE_HOME/forge/bwrap/$owner_name/pid")
	[ "$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")" = "$(id -u "$OWNER")" ]
	[ "$(stat -c %U "$SCRATCH/owner/.local/state/forge/bwrap/$owner_name/home")" = "$OWNER" ]
	run forge-sandbox rm "$OWNER_REPO"
	assert_success
	run alive "$pid"
	assert_failure
	[ ! -e "$SCRATCH/owner/.local/state/forge/bwrap/$owner_name" ]
	[ ! -e "$XDG_STATE_HOME/forge/bwrap/$owner_name" ]
}

@test "forge-dockerd-start inside a namespace sandbox says plainly that there is no Docker there (69)" {
	forge-sandbox up >/dev/null
	cp "$abs_top_srcdir/container/forge-dockerd-start" "$REPO/"
	# `false` as the client: no daemon answers, as in any namespace sandbox.
	run in_sandbox sh -c 'FORGE_DOCKER=false sh ./forge-dockerd-start'
	assert_failure 69
	assert_output --partial 'this is a namespace sandbox'
}

@test "rootfs image: the Docker image exported once into the cache by image ID, its ENV kept, the init runs in it" {
	docker_up
	make_rootfs "$SCRATCH/rootfs"
	# The init is static where musl-gcc is; a sanitizer build's needs its libraries.
	for lib in $(ldd "$abs_top_builddir/helpers/forge-sandbox-init" 2>/dev/null | grep -o '/[^ ]*' || :); do
		mkdir -p "$SCRATCH/rootfs${lib%/*}"
		cp -L "$lib" "$SCRATCH/rootfs$lib"
	done
	IMAGE_TAG=forge-test-bwrap:$$
	tar -C "$SCRATCH/rootfs" -c . |
		docker import --change 'ENV FORGE_IMAGE_ENV=from-image' --change 'ENV PATH=/bin' - "$IMAGE_TAG" >/dev/null
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "image"}, "image": "'"$IMAGE_TAG"'"}}'
	run --separate-stderr forge-sandbox up
	[ "$status" -eq 0 ] || fail "up: exit $status: $stderr"
	[[ $stderr == *"exporting $IMAGE_TAG"* ]]
	id=$(docker image inspect --format '{{.Id}}' "$IMAGE_TAG")
	[ -x "$HOME/.cache/forge/rootfs/${id#sha256:}/bin/busybox" ]
	run in_sandbox sh -c 'echo "$FORGE_IMAGE_ENV $(busybox id -u) $HOME"; ls /'
	assert_success
	assert_line 'from-image 1000 /opt/forge'
	# The image's root, not the host's: busybox's /bin, no /usr.
	refute_line usr
	run in_sandbox sh -c 'echo x >/bin/planted'
	assert_failure
	# Exported once: the next sandbox takes it from the cache.
	forge-sandbox rm >/dev/null
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr != *exporting* ]]
	# plan: the image's folders, from the cache, read-only at the top.
	run --separate-stderr forge-sandbox plan
	assert_line "$HOME/.cache/forge/rootfs/${id#sha256:}/bin"
}

@test "a sandbox whose init died: ls says stopped, exec is 69 naming forge-sandbox up, forge-shell fails closed (127), up starts it again" {
	forge-sandbox up >/dev/null
	pid=$(init_pid)
	kill -KILL "$pid"
	for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
	run forge-sandbox ls --json
	[ "$(jq -r --arg n "$NAME" '.[] | select(.name == $n) | .status' <<<"$output")" = stopped ]
	# forge-sandbox exec says so and how to start it (69); forge-shell, the
	# harness's shell, fails closed (127).
	run --separate-stderr in_sandbox true
	assert_failure 69
	[[ $stderr == *"error: the namespace sandbox $NAME for $REPO is not running; start it with: forge-sandbox up $REPO"* ]]
	FORGE_SANDBOX_CONTAINER=$NAME run -127 forge-shell -c true
	assert_output --partial 'refusing to run on the host'
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr == *"started $NAME"* ]]
	run in_sandbox true
	assert_success
}

@test "an egress allow-list: only loopback inside, the proxy inside on 127.0.0.1:3128 (t/sandbox-net.bats tests the traffic)" {
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"allow": ["example.com"]}}}'
	run --separate-stderr forge-sandbox up
	assert_success
	run in_sandbox sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
	assert_output lo
	run in_sandbox printenv HTTPS_PROXY
	assert_output http://127.0.0.1:3128
}

@test "auto with neither backend: 69 naming msb and bwrap (msb's doctor answered by the test double, bwrap by a failing one)" {
	use_stub
	echo 1 >"$STUB_DIR/doctor.rc"
	mkdir -p "$SCRATCH/fakebin"
	printf '#!/bin/sh\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n' >"$SCRATCH/fakebin/bwrap"
	chmod +x "$SCRATCH/fakebin/bwrap"
	user_config '{"sandbox": {"bwrap": {"rootfs": "host"}}}'
	PATH=$SCRATCH/fakebin:$PATH run forge-sandbox plan
	assert_failure 69
	assert_output --partial 'no sandbox backend works on this host'
	assert_output --partial 'msb: unsupported'
	assert_output --partial 'bwrap: bwrap cannot create user and network namespaces here: bwrap: setting up uid map: Permission denied'
	PATH=$SCRATCH/fakebin:$PATH run forge-sandbox doctor
	assert_failure 69
	assert_output --partial 'bwrap: unavailable'
}

@test "no descriptor of the caller of up reaches the sandbox or stays held by it" {
	forge-sandbox up 7>"$SCRATCH/held" >/dev/null
	pid=$(init_pid)
	run in_sandbox sh -c 'test -e /proc/self/fd/7 && echo leaked; ls /proc/self/fd | sort -n | tr "\n" " "'
	refute_output --partial leaked
	for p in "$pid" "$(ps -o ppid= -p "$pid" | tr -d ' ')"; do
		for f in /proc/"$p"/fd/*; do
			[ "$(readlink "$f")" != "$SCRATCH/held" ] || fail "process $p holds the caller's descriptor"
		done
	done
}

@test "a terminal never goes in: fds 0-2 that are a terminal reach the command as pipes, relayed both ways" {
	forge-sandbox up >/dev/null
	export FORGE_SANDBOX_CONTAINER=$NAME
	printf '%s\n' 'test -t 0 || echo no-tty-in' 'test -t 2 || echo no-tty-err >&2' \
		'read -r line; echo "got $line"; exit 5' >"$REPO/tty-probe"
	# script(1) gives forge-shell a terminal for its stdin and stderr; stdout
	# goes to a file (a terminal on both is terminal mode: t/terminal.bats).
	run script -qec 'forge-shell ./tty-probe >out; echo "rc=$?"' /dev/null < <(sleep 0.5; echo typed-line)
	assert_success
	assert_output --partial rc=5
	assert_output --partial no-tty-err
	run cat out
	assert_output --partial no-tty-in
	assert_output --partial 'got typed-line'
}

@test "with extensions.worktreeConfig, config.worktree is read-only too, also where there was none" {
	git config extensions.worktreeConfig true
	forge-sandbox up >/dev/null
	run in_sandbox git config --worktree core.hooksPath "$REPO/evil"
	assert_failure
	run git config --worktree core.hooksPath
	assert_failure
	run in_sandbox git config --worktree core.fsmonitor "$REPO/evil"
	assert_failure
	run git config core.fsmonitor
	assert_failure
}

@test "two up at once: one sandbox, the other adopts it" {
	forge-sandbox up >"$SCRATCH/up1" 2>&1 &
	first=$!
	forge-sandbox up >"$SCRATCH/up2" 2>&1 &
	second=$!
	wait "$first"
	wait "$second"
	[ "$(grep -c 'started' "$SCRATCH/up1" "$SCRATCH/up2" | awk -F: '{ n += $2 } END { print n }')" = 1 ]
	[ "$(grep -c 'adopting' "$SCRATCH/up1" "$SCRATCH/up2" | awk -F: '{ n += $2 } END { print n }')" = 1 ]
	run in_sandbox true
	assert_success
}

@test "exec without a sandbox: forge's own message naming forge-sandbox up, 69 (with msb on PATH or not); nothing runs" {
	for msb in /nonexistent/msb ''; do
		if [ -n "$msb" ]; then export FORGE_MSB=$msb; else unset FORGE_MSB; fi
		run --separate-stderr in_sandbox touch "$REPO/ran"
		assert_failure 69
		[[ $stderr == "forge-sandbox: error: no sandbox for $REPO ($NAME); start it with: forge-sandbox up $REPO" ]]
	done
	[ ! -e "$REPO/ran" ]
}

@test "rm of a worktree that never had a sandbox: says there is none, exit 0 (msb absent too); rm after up says removed" {
	FORGE_MSB=/nonexistent/msb run --separate-stderr forge-sandbox rm
	assert_success
	[ "$stderr" = "forge-sandbox: no sandbox for $REPO ($NAME); nothing to remove" ]
	run --separate-stderr forge-sandbox rm "$REPO"
	assert_success
	[ "$stderr" = "forge-sandbox: no sandbox for $REPO ($NAME); nothing to remove" ]
	forge-sandbox up >/dev/null 2>&1
	run --separate-stderr forge-sandbox rm
	assert_success
	[ "$stderr" = "forge-sandbox: removed $NAME" ]
	[ ! -e "$STATE" ]
}

@test "exec from a directory the sandbox does not see (outside its mounts): 126 naming it, nothing runs; in a mount it runs" {
	forge-sandbox up >/dev/null 2>&1
	mkdir -p "$SCRATCH/outside"
	for dir in "$SCRATCH/outside" "$SCRATCH" /; do
		cd "$dir"
		run --separate-stderr forge-sandbox exec "$REPO" -- touch "$REPO/ran"
		assert_failure 126
		[[ $stderr == "forge-sandbox: error: $dir is outside the sandbox $NAME: it sees the host only at its mounts (the worktree $REPO and "* ]]
	done
	[ ! -e "$REPO/ran" ]
	cd "$REPO/.git/objects"
	run forge-sandbox exec "$REPO" -- pwd
	assert_success
	assert_output "$REPO/.git/objects"
	cd "$TMPDIR/opencode"
	run forge-sandbox exec "$REPO" -- pwd
	assert_output "$TMPDIR/opencode"
}

@test "a worktree whose path holds a backslash, printf's escapes, '%', ':' and a space: up, exec in it, rm (bwrap's options go NUL-separated, as they are)" {
	REPO="$SCRATCH/"'back\slash \c\0101 %s:x'
	make_repo "$REPO"
	cd "$REPO"
	run --separate-stderr forge-sandbox up
	assert_success
	assert_output "$(expected_name "$REPO")"
	mkdir "$REPO/sub"
	cd "$REPO/sub"
	run forge-sandbox exec -- sh -c 'pwd -P; echo made inside >written'
	assert_success
	assert_output "$REPO/sub"
	[ "$(cat "$REPO/sub/written")" = 'made inside' ]
	run --separate-stderr forge-sandbox rm
	assert_success
	[ "$stderr" = "forge-sandbox: removed $(expected_name "$REPO")" ]
	[ ! -e "$XDG_STATE_HOME/forge/bwrap/$(expected_name "$REPO")" ]
}

@test "up adopting a running sandbox whose sandbox.network.env list changed: warned as drift, as for the allow-list; the same list is silent" {
	export FORGE_T_A=a FORGE_T_B=b
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"env": ["FORGE_T_A"]}}}'
	forge-sandbox up >/dev/null 2>&1
	[ "$(forge-state get "$REPO/.forge/sandbox/$NAME" env)" = FORGE_T_A ]
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr != *differs* ]]
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"env": ["FORGE_T_A", "FORGE_T_B"]}}}'
	run --separate-stderr forge-sandbox up
	assert_success
	[[ $stderr == *"warning: $NAME differs from the configuration in what is fixed when a sandbox is created"*"forge-sandbox up --recreate"* ]]
	[[ $stderr == *'env: created with: FORGE_T_A'*'env: configured:   FORGE_T_A FORGE_T_B'* ]]
	# Not passed in until it is recreated, as the warning says.
	run in_sandbox printenv FORGE_T_B
	assert_failure 1
	forge-sandbox up --recreate >/dev/null 2>&1
	run in_sandbox printenv FORGE_T_B
	assert_output b
	run --separate-stderr forge-sandbox up
	[[ $stderr != *differs* ]]
}

@test "the lifecycle lock goes with the sandbox: up/rm cycles leave nothing in the state folder" {
	forge-sandbox rm >/dev/null 2>&1
	for _ in 1 2 3; do
		forge-sandbox up >/dev/null 2>&1
		[ -e "$XDG_STATE_HOME/forge/bwrap/$NAME.lock" ]
		forge-sandbox rm >/dev/null 2>&1
		run find "$XDG_STATE_HOME" -mindepth 3
		assert_output ''
	done
	# rm waits for an up in progress (the lock), then the new file is the lock.
	forge-sandbox up >/dev/null 2>&1 &
	up=$!
	forge-sandbox rm >/dev/null 2>&1 &
	rm=$!
	wait "$up"
	wait "$rm"
	forge-sandbox up >/dev/null 2>&1
	run in_sandbox true
	assert_success
}

@test "forge-shell --exec is for namespace sandboxes only: with an msb sandbox it refuses (127), never the host" {
	FORGE_SANDBOX_CONTAINER=forge-msb-one run forge-shell --exec touch "$SCRATCH/ran-on-host"
	assert_failure 127
	assert_output --partial 'refusing to run on the host'
	[ ! -e "$SCRATCH/ran-on-host" ]
}

@test "a linked worktree: its project read-only around the read-write git dir (what msb cannot mount), commits work" {
	git -C "$REPO" worktree add -q "$SCRATCH/linked"
	LINKED=$(cd "$SCRATCH/linked" && pwd -P)
	cd "$LINKED"
	forge-sandbox up >/dev/null
	run forge-sandbox exec -- cat "$REPO/README"
	assert_output hello
	run forge-sandbox exec -- sh -c "echo x >>'$REPO/README'"
	assert_failure
	assert_output --partial 'Read-only file system'
	run forge-sandbox exec -- sh -c 'echo change >>README && git -c user.name=a -c user.email=a@b.invalid commit -qam inside && git log -1 --format=%s'
	assert_success
	assert_output inside
	[ "$(git -C "$LINKED" log -1 --format=%s)" = inside ]
	[ "$(cat "$REPO/README")" = hello ]
}

@test "the seccomp filter denies AF_VSOCK sockets (socket, socketpair); a call through another ABI (i386 socketcall, x32) kills the caller" {
	forge-sandbox up >/dev/null
	cp "$abs_top_builddir/t/seccomp-probe" "$REPO/"
	run in_sandbox ./seccomp-probe </dev/null
	assert_success
	assert_line 'socket-vsock EPERM'
	assert_line 'socketpair-vsock EPERM'
	if [ "$(uname -m)" = x86_64 ]; then
		assert_line --regexp '^socketcall-i386 (killed|no-ia32)$'
		assert_line 'socket-vsock-x32 killed'
	fi
	# Other sockets still work.
	assert_line 'socket-inet allowed'
	assert_line 'socketpair-unix allowed'
}

# distroless_image: imports IMAGE_TAG, an image holding one static binary,
# /hello (it prints "static ARG" and exits 7; with "proxy", it sends a
# request to 127.0.0.1:3128 and prints the answer's status line), plus the
# libraries forge's own helpers need when they are not static; no shell,
# no /bin/true.
distroless_image() {
	docker_up
	mkdir -p "$SCRATCH/distroless"
	cat >"$SCRATCH/hello.c" <<-'EOF'
	#include <arpa/inet.h>
	#include <netinet/in.h>
	#include <stdio.h>
	#include <string.h>
	#include <sys/socket.h>
	#include <unistd.h>
	int main(int argc, char **argv)
	{
		static const char req[] = "GET http://not-listed.invalid/ HTTP/1.1\r\nHost: not-listed.invalid\r\n\r\n";
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(3128) };
		char buf[512];
		ssize_t n;
		int fd;
		if (argc < 2 || strcmp(argv[1], "proxy") != 0) {
			printf("static %s\n", argc > 1 ? argv[1] : "-");
			return 7;
		}
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 || connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0
		    || write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1) || (n = read(fd, buf, sizeof buf - 1)) <= 0) {
			perror("proxy");
			return 1;
		}
		buf[n] = '\0';
		buf[strcspn(buf, "\r\n")] = '\0';
		printf("%s\n", buf);
		return 0;
	}
	EOF
	cc -static -O2 -o "$SCRATCH/distroless/hello" "$SCRATCH/hello.c" || unavailable "no static C library (apt-get install libc6-dev)"
	# The helpers are static where musl-gcc is; a sanitizer build's need their libraries.
	for helper in forge-sandbox-init forge-relay; do
		for lib in $(ldd "$abs_top_builddir/helpers/$helper" 2>/dev/null | grep -o '/[^ ]*' || :); do
			mkdir -p "$SCRATCH/distroless${lib%/*}"
			cp -L "$lib" "$SCRATCH/distroless$lib"
		done
	done
	IMAGE_TAG=forge-test-distroless:$$
	tar -C "$SCRATCH/distroless" -c . | docker import - "$IMAGE_TAG" >/dev/null
}

# distroless_up MORE: up of a sandbox on distroless_image's image, MORE
# (more members of "sandbox", with a leading comma) configured too.
distroless_up() {
	distroless_image
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "image"}, "image": "'"$IMAGE_TAG"'"'"$1"'}}'
	run --separate-stderr forge-sandbox up
	[ "$status" -eq 0 ] || fail "up: exit $status: $stderr"
	assert_output "$NAME"
}

@test "rootfs image without a shell or /bin/true (distroless): up never runs a program of the image; exec of its static binary works" {
	distroless_up ''
	run in_sandbox /hello inside
	assert_failure 7
	assert_output 'static inside'
	run -127 in_sandbox true
	assert_failure 127
}

@test "rootfs image without a shell (distroless) with an egress allow-list: up starts forge's own relay, no program of the image; the proxy answers inside" {
	distroless_up ', "network": {"allow": ["example.com"]}'
	# A name outside the list: forge-egress's refusal, through the relay.
	run in_sandbox /hello proxy
	assert_success
	assert_output 'HTTP/1.1 403 Forbidden'
}
