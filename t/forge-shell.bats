#!/usr/bin/env bats
load test_helper
setup() { load_support; forge_test_setup; unset FORGE_SANDBOX_REQUIRED FORGE_SANDBOX_BACKEND FORGE_SANDBOX_STATE; }
teardown() {
	# A namespace sandbox a test started (ns_up) goes with it.
	[ -z "${NS_REPO:-}" ] || forge-sandbox rm "$NS_REPO" >/dev/null 2>&1 || :
	[ -z "${PW_USER:-}" ] || { as_pw_user env HOME="$SCRATCH/pw-home" forge-sandbox rm "$PW_REPO" >/dev/null 2>&1; userdel "$PW_USER" 2>/dev/null; } || :
	forge_test_teardown
}

bats_require_minimum_version 1.5.0

# stub_msb: puts a test double of msb in $SCRATCH/stubbin. It logs its argv
# one per line to $MSB_LOG (and NUL-separated to $MSB_LOG.z), accepts only
# `exec NAME [--quiet|--no-tty|-w DIR]... -- CMD...` (options before or after
# NAME) like the real one, and exits 2 otherwise: a command not after `--`, an
# unknown option; then it plays the guest: runs CMD in DIR, exits with its status.
# It also arms a host-shell trap: $SHELL and FORGE_HOST_SHELL point at a shell
# that leaves $HOST_MARKER behind, so a test can prove the host never ran.
stub_msb() {
	mkdir -p "$SCRATCH/stubbin"
	export MSB_LOG="$SCRATCH/msb.log" HOST_MARKER="$SCRATCH/host-shell-ran"
	cat >"$SCRATCH/stubbin/msb" <<'EOF'
#!/bin/bash
printf '%s\n' "$@" >"$MSB_LOG"
printf '%s\0' "$@" >"$MSB_LOG.z"
[ "$1" = exec ] || { echo "stub msb: only exec is supported" >&2; exit 2; }
shift
name= workdir=
while [ $# -gt 0 ]; do
	case $1 in
	--) shift; break ;;
	--quiet|-q|--no-tty) shift ;;
	-w|--workdir) workdir=$2; shift 2 ;;
	-*) echo "error: unexpected argument '$1'" >&2; exit 2 ;;
	*)
		[ -z "$name" ] || { echo "error: unexpected argument '$1' (the command goes after --)" >&2; exit 2; }
		name=$1; shift ;;
	esac
done
[ -n "$name" ] || { echo "error: no sandbox name" >&2; exit 2; }
[ $# -gt 0 ] || { echo "error: no command after --" >&2; exit 2; }
cd "${workdir:-/}" || exit 1
exec "$@"
EOF
	chmod +x "$SCRATCH/stubbin/msb"
	cat >"$SCRATCH/host-shell" <<'EOF'
#!/bin/sh
: >"$HOST_MARKER"
exec /bin/bash "$@"
EOF
	chmod +x "$SCRATCH/host-shell"
	export FORGE_HOST_SHELL="$SCRATCH/host-shell" SHELL="$SCRATCH/host-shell"
	export FORGE_MSB="$SCRATCH/stubbin/msb" FORGE_SANDBOX_CONTAINER=forge-work-0123abcd
}

# exit_statuses_pass_through: forge-shell -c exits with the shell's status
# (0, 1, 42, 255) and 128 + the signal that killed it.
exit_statuses_pass_through() {
	run forge-shell -c 'exit 0'
	assert_success
	run forge-shell -c 'exit 1'
	assert_failure 1
	run forge-shell -c 'exit 42'
	assert_failure 42
	run forge-shell -c 'exit 255'
	assert_failure 255
	run forge-shell -c 'kill -TERM $$'
	assert_failure 143
}

# strace_or_skip: strace can trace here; skips otherwise, except in CI.
strace_or_skip() {
	# LeakSanitizer cannot run under ptrace (sanitizer builds, make check in CI).
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	if ! command -v strace >/dev/null; then
		[ "${CI:-}" != true ] || fail "CI=true but strace is not installed"
		skip "strace is not installed"
	fi
	if ! strace -o /dev/null /bin/true 2>/dev/null; then
		[ "${CI:-}" != true ] || fail "CI=true but strace cannot trace (ptrace not permitted?)"
		skip "strace cannot trace here"
	fi
}

@test "--help and --version are forge-shell's own only as the sole argument" {
	assert_help_and_version forge-shell 'usage: forge-shell'
	unset FORGE_SANDBOX_CONTAINER
	FORGE_HOST_SHELL=/bin/bash run --separate-stderr forge-shell -c 'printf "%s|" "$0" "$@"' sh --help --version
	assert_success
	assert_output 'sh|--help|--version|'
}

@test "in the sandbox: argv is exactly exec --quiet NAME --no-tty -w CWD -- bash ARGS" {
	stub_msb
	cd "$SCRATCH"
	run --separate-stderr forge-shell -c 'echo "in the guest"'
	assert_success
	assert_output 'in the guest'
	[ "$(cat "$MSB_LOG")" = "$(printf '%s\n' exec --quiet forge-work-0123abcd --no-tty -w "$(pwd -P)" -- bash -c 'echo "in the guest"')" ]
	[ ! -e "$HOST_MARKER" ]
}

@test "in the sandbox: msb's exit status passes through verbatim (0, 1, 42, 255, a signal)" {
	stub_msb
	exit_statuses_pass_through
	[ ! -e "$HOST_MARKER" ]
}

@test "in the sandbox: arguments with spaces, quotes, newlines, globs, dashes and empties arrive unchanged" {
	stub_msb
	args=('a b' "it's" '"double"' $'line1\nline2' '' '*' '--' '-n' '$HOME' '\x')
	run --separate-stderr forge-shell -c 'printf "<%s>\n" "$0" "$@"' arg0 "${args[@]}"
	assert_success
	assert_output "$(printf '<%s>\n' arg0 "${args[@]}")"
	# and msb received them as separate arguments, byte for byte
	mapfile -d '' -t got <"$MSB_LOG.z"
	want=(exec --quiet forge-work-0123abcd --no-tty -w "$(pwd -P)" -- bash -c 'printf "<%s>\n" "$0" "$@"' arg0 "${args[@]}")
	[ "${#got[@]}" -eq "${#want[@]}" ]
	for i in "${!want[@]}"; do [ "${got[$i]}" = "${want[$i]}" ]; done
}

@test "in the sandbox: a working directory reached through a symlink is passed as its physical path" {
	stub_msb
	mkdir -p "$SCRATCH/real dir/sub"
	ln -s "$SCRATCH/real dir" "$SCRATCH/link"
	cd "$SCRATCH/link/sub"
	[ "$PWD" = "$SCRATCH/link/sub" ]
	run --separate-stderr forge-shell -c pwd
	assert_success
	physical=$(cd "$SCRATCH/real dir/sub" && pwd -P)
	assert_output "$physical"
	[ "$(sed -n 6p "$MSB_LOG")" = "$physical" ]
}

@test "msb not found via FORGE_MSB: exit 127 with the message, the host shell never runs" {
	stub_msb
	FORGE_MSB="$SCRATCH/nonexistent/msb" run -127 --separate-stderr forge-shell -c ': >"$HOST_MARKER.cmd"'
	assert_failure 127
	[ "$stderr" = "forge-shell: error: cannot run msb ($SCRATCH/nonexistent/msb: No such file or directory); refusing to run on the host" ]
	[ -z "$output" ]
	[ ! -e "$HOST_MARKER" ]
	[ ! -e "$HOST_MARKER.cmd" ]
}

@test "msb not on PATH (FORGE_MSB unset): exit 127 with the message, the host shell never runs" {
	stub_msb
	unset FORGE_MSB
	mkdir "$SCRATCH/empty"
	run -127 --separate-stderr env PATH="$SCRATCH/empty" "$abs_top_builddir/helpers/forge-shell" -c ': >"$HOST_MARKER.cmd"'
	assert_failure 127
	[ "$stderr" = 'forge-shell: error: cannot run msb (msb not found on PATH); refusing to run on the host' ]
	[ ! -e "$HOST_MARKER" ]
	[ ! -e "$HOST_MARKER.cmd" ]
}

@test "msb found but not executable (a file without x, a directory): 127, fails closed" {
	stub_msb
	printf '#!/bin/sh\nexit 0\n' >"$SCRATCH/msb-noexec"
	mkdir "$SCRATCH/msb-dir"
	for bad in "$SCRATCH/msb-noexec" "$SCRATCH/msb-dir"; do
		FORGE_MSB=$bad run -127 --separate-stderr forge-shell -c 'exit 0'
		assert_failure 127
		[[ $stderr == "forge-shell: error: cannot run msb ($bad: Permission denied); refusing to run on the host" ]]
	done
	[ ! -e "$HOST_MARKER" ]
}

@test "msb on PATH: found like execvp would (skipping non-executables and directories); FORGE_MSB must be absolute" {
	stub_msb
	unset FORGE_MSB
	mkdir -p "$SCRATCH/p1/msb" "$SCRATCH/p2" "$SCRATCH/p3"
	printf '#!/bin/sh\nexit 99\n' >"$SCRATCH/p2/msb"
	cp "$SCRATCH/stubbin/msb" "$SCRATCH/p3/msb"
	PATH="$SCRATCH/p1:$SCRATCH/p2:$SCRATCH/p3:$PATH" run forge-shell -c 'echo ok'
	assert_success
	assert_output ok
	[ "$(sed -n 1p "$MSB_LOG")" = exec ]
	ln -s "$SCRATCH/stubbin/msb" "$SCRATCH/p3/msb-other"
	PATH="$SCRATCH/p3:$PATH" FORGE_MSB=msb-other run -127 --separate-stderr forge-shell -c 'echo other'
	assert_failure 127
	[ "$stderr" = 'forge-shell: error: cannot run msb (FORGE_MSB=msb-other is not an absolute path); refusing to run on the host' ]
	[ ! -e "$HOST_MARKER" ]
}

# Which msb runs, by forge-shell (C) and by the library's forge_msb_find
# (forge-sandbox exec, sh): one rule, checked with the same cases. Each
# candidate msb records its own path and exits 0.
@test "forge-shell and forge-sandbox exec choose msb by one rule: empty and relative PATH elements are skipped" {
	stub_msb
	unset FORGE_MSB
	W=$SCRATCH/worktree
	mkdir -p "$W/rel" "$SCRATCH/p3" "$SCRATCH/none"
	export WHICH_LOG=$SCRATCH/which
	for m in "$W/msb" "$W/rel/msb" "$SCRATCH/p3/msb"; do
		printf '#!/bin/sh\nprintf "%%s\\n" "$0" >"$WHICH_LOG"\n' >"$m"
		chmod +x "$m"
	done
	cd "$W"
	P3=$SCRATCH/p3 NONE=$SCRATCH/none
	# PATH|FORGE_MSB|the msb that runs ("none": 127, nothing runs)
	cases=(
		"$NONE:|-|none"
		":$NONE|-|none"
		"$NONE::$NONE|-|none"
		".|-|none"
		"rel:$NONE|-|none"
		"|-|none"
		":$P3|-|$P3/msb"
		".:rel:$P3|-|$P3/msb"
		"$NONE::rel:.:$P3:|-|$P3/msb"
		"$P3|msb|none"
		"$P3|./msb|none"
		"$P3|rel/msb|none"
		"$NONE|$P3/msb|$P3/msb"
		"$NONE|$W/msb|$W/msb"
		"$NONE|$NONE/msb|none"
	)
	for c in "${cases[@]}"; do
		IFS='|' read -r path msb want <<<"$c"
		envs=(PATH="$path")
		[ "$msb" = - ] || envs+=(FORGE_MSB="$msb")
		rm -f "$WHICH_LOG"
		st=0
		env "${envs[@]}" "$abs_top_builddir/helpers/forge-shell" -c true 2>/dev/null || st=$?
		got=none
		[ "$st" -ne 0 ] || got=$(cat "$WHICH_LOG")
		[ "$st" -eq 0 ] || [ "$st" -eq 127 ] || fail "$c: forge-shell exited $st"
		[ "$got" = "$want" ] || fail "forge-shell, PATH='$path' FORGE_MSB='$msb': ran '$got', want '$want'"
		got=$(env "${envs[@]}" /bin/sh -c '. "$FORGE_LIBDIR/forge.sh" && forge_msb_find && printf "%s\n" "$forge_msb"') ||
			got=none
		[ "$got" = "$want" ] || fail "forge_msb_find, PATH='$path' FORGE_MSB='$msb': chose '$got', want '$want'"
	done
	[ ! -e "$HOST_MARKER" ]
}

@test "a working directory that no longer exists: 127, fails closed" {
	stub_msb
	mkdir "$SCRATCH/gone"
	cd "$SCRATCH/gone"
	rmdir "$SCRATCH/gone"
	run -127 --separate-stderr forge-shell -c 'exit 0'
	assert_failure 127
	[[ $stderr == 'forge-shell: error: cannot run msb (cannot determine the working directory: '*'); refusing to run on the host' ]]
	[ ! -e "$HOST_MARKER" ]
	[ ! -e "$MSB_LOG" ]
}

@test "a sandbox name msb would take for an option or reject: 127, fails closed" {
	stub_msb
	for name in --help -x 'a b' '.hidden' "$(printf 'a%.0s' {1..129})"; do
		FORGE_SANDBOX_CONTAINER=$name run -127 --separate-stderr forge-shell -c 'exit 0'
		assert_failure 127
		[[ $stderr == "forge-shell: error: FORGE_SANDBOX_CONTAINER is not a valid sandbox name: '"* ]]
	done
	[ ! -e "$HOST_MARKER" ]
	[ ! -e "$MSB_LOG" ]
}

@test "FORGE_SANDBOX_CONTAINER unset or empty: the host shell runs, msb does not" {
	stub_msb
	unset FORGE_SANDBOX_CONTAINER
	run forge-shell -c 'echo on the host'
	assert_success
	assert_output 'on the host'
	[ -e "$HOST_MARKER" ]
	rm "$HOST_MARKER"
	FORGE_SANDBOX_CONTAINER='' run forge-shell -c 'exit 42'
	assert_failure 42
	[ -e "$HOST_MARKER" ]
	[ ! -e "$MSB_LOG" ]
}

@test "on the host: FORGE_HOST_SHELL wins, gets the arguments unchanged and \$0 is its path" {
	unset FORGE_SANDBOX_CONTAINER
	printf '#!/bin/bash\nprintf "<%%s>\\n" "$@"\n' >"$SCRATCH/show-args"
	chmod +x "$SCRATCH/show-args"
	args=(-c 'a b' $'x\ny' '' "it's" -- --help)
	FORGE_HOST_SHELL="$SCRATCH/show-args" SHELL=/bin/sh run --separate-stderr forge-shell "${args[@]}"
	assert_success
	assert_output "$(printf '<%s>\n' "${args[@]}")"
	FORGE_HOST_SHELL=/bin/bash run forge-shell -c 'echo "$0"'
	assert_output /bin/bash
	# a bare name is looked up on PATH
	FORGE_HOST_SHELL=bash run forge-shell -c 'echo "$BASH_VERSION"'
	assert_success
	[ -n "$output" ]
}

@test "on the host: exit statuses pass through (0, 1, 42, 255, a signal)" {
	unset FORGE_SANDBOX_CONTAINER
	export FORGE_HOST_SHELL=/bin/bash
	exit_statuses_pass_through
}

@test "on the host: FORGE_HOST_SHELL that cannot run is an error (127/126), not a fallback" {
	unset FORGE_SANDBOX_CONTAINER
	FORGE_HOST_SHELL="$SCRATCH/nope" run -127 --separate-stderr forge-shell -c 'echo ran'
	assert_failure 127
	[ -z "$output" ]
	[[ $stderr == 'forge-shell: error: cannot run the host shell ('* ]]
	printf 'echo ran\n' >"$SCRATCH/not-exec"
	FORGE_HOST_SHELL="$SCRATCH/not-exec" run --separate-stderr forge-shell -c 'echo ran'
	assert_failure 126
	[ -z "$output" ]
}

@test "on the host: \$SHELL when absolute and executable; else /bin/bash" {
	unset FORGE_SANDBOX_CONTAINER FORGE_HOST_SHELL
	printf '#!/bin/sh\necho "custom shell: $*"\n' >"$SCRATCH/my-shell"
	chmod +x "$SCRATCH/my-shell"
	SHELL="$SCRATCH/my-shell" run forge-shell -c 'x'
	assert_output 'custom shell: -c x'
	for shell in my-shell "$SCRATCH/missing" "$SCRATCH" '' ; do
		SHELL=$shell run forge-shell -c 'echo "$0"'
		assert_success
		assert_output /bin/bash
	done
	printf 'echo no x bit\n' >"$SCRATCH/no-x"
	SHELL="$SCRATCH/no-x" run forge-shell -c 'echo "$0"'
	assert_output /bin/bash
	(unset SHELL && run forge-shell -c 'echo "$0"' && [ "$output" = /bin/bash ])
}

@test "on the host: \$SHELL naming forge-shell itself (directly, via a symlink or a hard link) is skipped, no loop" {
	unset FORGE_SANDBOX_CONTAINER FORGE_HOST_SHELL
	self=$(command -v forge-shell)
	ln -s "$self" "$SCRATCH/sh-link"
	ln -s "$SCRATCH/sh-link" "$SCRATCH/sh-link2"
	ln "$self" "$SCRATCH/sh-hard" 2>/dev/null || cp "$self" "$SCRATCH/sh-hard"
	for shell in "$self" "$SCRATCH/sh-link2"; do
		SHELL=$shell run timeout 10 forge-shell -c 'echo "$0"'
		assert_success
		assert_output /bin/bash
	done
	# run through the link itself: /proc/self/exe is the same file
	SHELL="$SCRATCH/sh-link" run timeout 10 "$SCRATCH/sh-link2" -c 'echo "$0"'
	assert_output /bin/bash
	# a hard link (or, where none can be made, a copy run as itself)
	SHELL="$SCRATCH/sh-hard" run timeout 10 "$SCRATCH/sh-hard" -c 'echo "$0"'
	assert_output /bin/bash
}

@test "on the host: FORGE_HOST_SHELL naming forge-shell itself is refused (127), not looped" {
	unset FORGE_SANDBOX_CONTAINER
	self=$(command -v forge-shell)
	ln -s "$self" "$SCRATCH/sh-link"
	for shell in "$self" "$SCRATCH/sh-link" forge-shell; do
		FORGE_HOST_SHELL=$shell run -127 --separate-stderr timeout 10 forge-shell -c 'echo ran'
		assert_failure 127
		[ -z "$output" ]
		[ "$stderr" = "forge-shell: error: FORGE_HOST_SHELL=$shell is forge-shell itself; refusing to exec it in a loop" ]
	done
}

@test "on the host: started as a login shell (argv[0] -forge-shell), the host shell is one too" {
	unset FORGE_SANDBOX_CONTAINER
	FORGE_HOST_SHELL=/bin/bash run bash -c 'exec -a -forge-shell forge-shell -c "echo \"\$0\"; shopt -q login_shell && echo login"'
	assert_success
	[ "${lines[-2]}" = -bash ]
	[ "${lines[-1]}" = login ]
}

@test "no fork: forge-shell makes exactly one execve (to msb, or to the host shell) and no clone/fork/vfork" {
	strace_or_skip
	self=$(command -v forge-shell)
	# /bin/true stands in for msb and the host shell: it execs nothing itself
	FORGE_SANDBOX_CONTAINER=forge-x FORGE_MSB=/bin/true run strace -f -qq -e trace=process -o "$SCRATCH/trace" "$self" -c 'echo hi'
	assert_success
	[ "$(grep -c 'execve(' "$SCRATCH/trace")" -eq 2 ]
	grep -q "execve(\"$self\"" "$SCRATCH/trace"
	grep -q 'execve("/bin/true", \["/bin/true", "exec", "--quiet", "forge-x", "--no-tty", "-w"' "$SCRATCH/trace"
	run ! grep -E -q '(clone|clone3|fork|vfork)\(' "$SCRATCH/trace"
	[ "$(cut -d' ' -f1 "$SCRATCH/trace" | sort -u | wc -l)" -eq 1 ]

	unset FORGE_SANDBOX_CONTAINER
	FORGE_HOST_SHELL=/bin/true run strace -f -qq -e trace=process -o "$SCRATCH/trace" "$self" -c 'echo hi'
	assert_success
	[ "$(grep -c 'execve(' "$SCRATCH/trace")" -eq 2 ]
	grep -q 'execve("/bin/true", \["/bin/true", "-c", "echo hi"\]' "$SCRATCH/trace"
	! grep -E -q '(clone|clone3|fork|vfork)\(' "$SCRATCH/trace"
}

@test "fails closed even without a PATH: msb is not looked up in the current directory" {
	stub_msb
	unset FORGE_MSB
	cp "$SCRATCH/stubbin/msb" "$SCRATCH/msb"
	cd "$SCRATCH"
	if [ -x /usr/local/bin/msb ] || [ -x /usr/bin/msb ] || [ -x /bin/msb ]; then
		# An msb in the default PATH (/usr/local/bin:/usr/bin:/bin) is the one
		# that runs (and fails: there is no such sandbox), never ./msb.
		run --separate-stderr env -u PATH "$abs_top_builddir/helpers/forge-shell" -c 'exit 0'
		assert_failure
	else
		run -127 --separate-stderr env -u PATH "$abs_top_builddir/helpers/forge-shell" -c 'exit 0'
		assert_failure 127
		[[ $stderr == *'msb not found on PATH'* ]]
	fi
	[ ! -e "$MSB_LOG" ]
	[ ! -e "$HOST_MARKER" ]
}

# ns_up: a real namespace sandbox (bwrap, the host's own /usr) for a scratch
# repository $NS_REPO; NS_NAME is its name, NS_STATE its state folder. msb
# is the logging stub (stub_msb), so a test can prove msb never ran.
ns_up() {
	if ! bwrap --unshare-user --unshare-net --ro-bind / / true 2>/dev/null; then
		[ "${CI:-}" != true ] || fail "bwrap cannot create user namespaces on this CI host"
		skip "this host cannot create user namespaces (bwrap --unshare-user fails)"
	fi
	stub_msb
	unset FORGE_SANDBOX_CONTAINER
	mkdir -p "$XDG_CONFIG_HOME/forge"
	printf '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}}}\n' >"$XDG_CONFIG_HOME/forge/config.json"
	make_repo "$SCRATCH/ns-repo"
	NS_REPO=$(cd "$SCRATCH/ns-repo" && pwd -P)
	NS_NAME=$(forge-sandbox up "$NS_REPO" 2>/dev/null) || fail "forge-sandbox up failed"
	NS_STATE=$HOME/.local/state/forge/bwrap/$NS_NAME
	cd "$NS_REPO"
}

# as_pw_user COMMAND...: COMMAND as the user $PW_USER (made by a test), with
# no HOME and no XDG variables: only its passwd entry says where its home is.
as_pw_user() {
	setpriv --reuid="$PW_USER" --regid="$PW_USER" --clear-groups -- \
		env -u HOME -u XDG_STATE_HOME -u XDG_CONFIG_HOME -u XDG_CACHE_HOME -u XDG_DATA_HOME "$@"
}

@test "required mode: FORGE_SANDBOX_REQUIRED=1 with no container is 127 and runs nothing; only 'host' runs the host shell" {
	stub_msb
	export FORGE_SANDBOX_REQUIRED=1
	unset FORGE_SANDBOX_CONTAINER
	run -127 --separate-stderr forge-shell -c 'echo ran'
	assert_failure 127
	assert_output ''
	[ "$stderr" = 'forge-shell: error: no sandbox for this session; refusing to run on the host' ]
	FORGE_SANDBOX_CONTAINER='' run -127 forge-shell -c 'echo ran'
	assert_failure 127
	[ ! -e "$HOST_MARKER" ]
	[ ! -e "$MSB_LOG" ]
	# A value that is neither 1 nor 0 fails closed too.
	FORGE_SANDBOX_REQUIRED=yes run -127 forge-shell -c 'echo ran'
	assert_failure 127
	assert_output --partial 'FORGE_SANDBOX_REQUIRED=yes is neither 1 nor 0'
	[ ! -e "$HOST_MARKER" ]
	FORGE_SANDBOX_CONTAINER=host run forge-shell -c 'echo on the host; exit 3'
	assert_failure 3
	assert_output 'on the host'
	[ -e "$HOST_MARKER" ]
	[ ! -e "$MSB_LOG" ]
	# 0 is the default: the host shell.
	rm "$HOST_MARKER"
	FORGE_SANDBOX_REQUIRED=0 run forge-shell -c 'exit 4'
	assert_failure 4
	[ -e "$HOST_MARKER" ]
}

@test "FORGE_SANDBOX_CONTAINER=host is the host shell outside required mode too; msb never sees the name" {
	stub_msb
	export FORGE_SANDBOX_CONTAINER=host
	run forge-shell -c 'echo "on the host $0"' zero
	assert_success
	assert_output 'on the host zero'
	[ -e "$HOST_MARKER" ]
	[ ! -e "$MSB_LOG" ]
}

@test "namespace: forge-sandbox env exports the backend and the state folder; with only those, the command runs inside" {
	ns_up
	run --separate-stderr forge-sandbox env "$NS_REPO"
	assert_success
	assert_line --index 0 "export FORGE_SANDBOX_CONTAINER='$NS_NAME'"
	assert_line --index 1 'export FORGE_SANDBOX_BACKEND=bwrap'
	assert_line --index 2 "export FORGE_SANDBOX_STATE=$NS_STATE"
	eval "$output"
	# No HOME, no XDG variable: what env exported is enough.
	run env -u HOME -u XDG_STATE_HOME forge-shell -c 'hostname; id -u; test ! -e /etc/shadow && echo no-shadow'
	assert_success
	assert_line --index 0 "$NS_NAME"
	assert_line --index 1 1000
	assert_line --index 2 no-shadow
	[ ! -e "$MSB_LOG" ]
	[ ! -e "$HOST_MARKER" ]
}

@test "namespace: a removed sandbox named by what env exported is forge-shell's 127, never msb's 'not found'" {
	ns_up
	eval "$(forge-sandbox env "$NS_REPO")"
	forge-sandbox rm "$NS_REPO" >/dev/null
	run -127 --separate-stderr forge-shell -c 'echo ran'
	assert_failure 127
	assert_output ''
	[[ $stderr == "forge-shell: error: the namespace sandbox $NS_NAME is not there (no state folder $NS_STATE): removed? forge-sandbox up in its worktree starts it; refusing to run on the host" ]]
	[ ! -e "$MSB_LOG" ]
	[ ! -e "$HOST_MARKER" ]
	# FORGE_SANDBOX_BACKEND=bwrap alone says as much, and --exec too.
	unset FORGE_SANDBOX_STATE
	run -127 forge-shell --exec true
	assert_failure 127
	assert_output --partial 'is not there'
	[ ! -e "$MSB_LOG" ]
}

@test "namespace: a sandbox whose state is gone but forge's registry says bwrap: 127, never msb; the registry's msb goes to msb" {
	stub_msb
	mkdir -p "$HOME/.local/state/forge/sandboxes"
	printf 'worktree=/nowhere\nbackend=bwrap\n' >"$HOME/.local/state/forge/sandboxes/forge-gone-0123abcd"
	FORGE_SANDBOX_CONTAINER=forge-gone-0123abcd run -127 forge-shell -c 'echo ran'
	assert_failure 127
	assert_output --partial 'the namespace sandbox forge-gone-0123abcd is not there'
	[ ! -e "$MSB_LOG" ]
	[ ! -e "$HOST_MARKER" ]
	printf 'worktree=/nowhere\nbackend=msb\n' >"$HOME/.local/state/forge/sandboxes/forge-gone-0123abcd"
	FORGE_SANDBOX_CONTAINER=forge-gone-0123abcd run forge-shell -c 'echo ran'
	assert_success
	[ -e "$MSB_LOG" ]
}

@test "namespace: a stopped sandbox (state folder there, exec socket dead or missing) is 127 with forge-shell's message" {
	stub_msb
	state=$HOME/.local/state/forge/bwrap/forge-stopped-0123abcd
	mkdir -p "$state"
	FORGE_SANDBOX_CONTAINER=forge-stopped-0123abcd run -127 --separate-stderr forge-shell -c 'echo ran'
	assert_failure 127
	[[ $stderr == "forge-shell: error: the namespace sandbox forge-stopped-0123abcd is not running (its exec socket in $state does not answer: "*"); forge-sandbox up starts it; refusing to run on the host" ]]
	# A socket file nobody listens on any more (the init was killed).
	python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$state/exec.sock"
	FORGE_SANDBOX_CONTAINER=forge-stopped-0123abcd run -127 forge-shell -c 'echo ran'
	assert_failure 127
	assert_output --partial 'Connection refused'
	[ ! -e "$MSB_LOG" ]
	[ ! -e "$HOST_MARKER" ]
}

@test "namespace: bad FORGE_SANDBOX_BACKEND or FORGE_SANDBOX_STATE values fail closed (127)" {
	stub_msb
	FORGE_SANDBOX_BACKEND=docker run -127 forge-shell -c 'echo ran'
	assert_failure 127
	assert_output --partial 'FORGE_SANDBOX_BACKEND=docker is neither bwrap nor msb'
	FORGE_SANDBOX_STATE=relative/forge-work-0123abcd run -127 forge-shell -c 'echo ran'
	assert_failure 127
	FORGE_SANDBOX_STATE=$HOME/.local/state/forge/bwrap/forge-other-0123abcd run -127 forge-shell -c 'echo ran'
	assert_failure 127
	assert_output --partial 'is not the absolute state folder of forge-work-0123abcd'
	FORGE_SANDBOX_BACKEND=msb FORGE_SANDBOX_STATE=$HOME/.local/state/forge/bwrap/forge-work-0123abcd run -127 forge-shell -c 'echo ran'
	assert_failure 127
	[ ! -e "$MSB_LOG" ]
	[ ! -e "$HOST_MARKER" ]
	# FORGE_SANDBOX_BACKEND=msb: msb, whatever folders there are.
	mkdir -p "$HOME/.local/state/forge/bwrap/forge-work-0123abcd"
	FORGE_SANDBOX_BACKEND=msb run forge-shell -c 'echo ran'
	assert_success
	[ -e "$MSB_LOG" ]
}

@test "namespace: the state folder is found without HOME, through the passwd entry; a relative XDG_STATE_HOME is ignored" {
	[ "$(id -u)" = 0 ] || [ "${CI:-}" = true ] || skip "needs root to make a user whose passwd home is a scratch folder"
	if ! bwrap --unshare-user --unshare-net --ro-bind / / true 2>/dev/null; then
		[ "${CI:-}" != true ] || fail "bwrap cannot create user namespaces on this CI host"
		skip "this host cannot create user namespaces (bwrap --unshare-user fails)"
	fi
	stub_msb
	unset FORGE_SANDBOX_CONTAINER
	PW_USER=forge-pw$$
	chmod 755 "$SCRATCH"
	useradd -M -d "$SCRATCH/pw-home" -s /bin/sh "$PW_USER"
	mkdir -p "$SCRATCH/pw-home/.config/forge"
	printf '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"allow": ["example.com"]}}}\n' \
		>"$SCRATCH/pw-home/.config/forge/config.json"
	make_repo "$SCRATCH/pw-home/repo"
	chown -R "$PW_USER:" "$SCRATCH/pw-home" "$SCRATCH/stubbin"
	chmod 644 "$MSB_LOG" 2>/dev/null || :
	PW_REPO=$SCRATCH/pw-home/repo
	# up itself is given the home (forge-sandbox's side is not under test here).
	name=$(as_pw_user env HOME="$SCRATCH/pw-home" forge-sandbox up "$PW_REPO" 2>/dev/null)
	[ -d "$SCRATCH/pw-home/.local/state/forge/bwrap/$name" ]
	cd "$PW_REPO"
	run as_pw_user env FORGE_SANDBOX_CONTAINER="$name" forge-shell -c 'hostname; id -u'
	assert_success
	assert_line --index 0 "$name"
	assert_line --index 1 1000
	run as_pw_user env HOME=relative XDG_STATE_HOME=relative/state FORGE_SANDBOX_CONTAINER="$name" forge-shell -c hostname
	assert_success
	assert_output "$name"
	[ ! -e "$MSB_LOG" ]
}

@test "namespace: a command that dies by a signal kills forge-shell by the same signal (Node: SIGTERM, Python: -2); exit 143 stays 143" {
	ns_up
	eval "$(forge-sandbox env "$NS_REPO")"
	run node -e 'const r = require("child_process").spawnSync("forge-shell", ["-c", "kill -TERM $$"]); console.log(r.status, r.signal)'
	assert_output 'null SIGTERM'
	run python3 -c 'import subprocess; print(subprocess.run(["forge-shell", "-c", "kill -INT $$"]).returncode)'
	assert_output -- -2
	run python3 -c 'import subprocess; print(subprocess.run("kill -TERM $$", shell=True, executable="forge-shell").returncode)'
	assert_output -- -15
	# An exit status that only looks like a signal's is one.
	run python3 -c 'import subprocess; print(subprocess.run(["forge-shell", "-c", "exit 143"]).returncode)'
	assert_output 143
	run node -e 'const r = require("child_process").spawnSync("forge-shell", ["-c", "kill -KILL $$"]); console.log(r.status, r.signal)'
	assert_output 'null SIGKILL'
	# No core file of forge-shell's own.
	run forge-shell -c 'kill -SEGV $$'
	assert_failure 139
	run ls "$NS_REPO"
	refute_output --partial core
}

@test "GNU make .ONESHELL with SHELL=a 'bash' link to forge-shell: @, - and + are stripped and the recipe runs inside" {
	ns_up
	eval "$(forge-sandbox env "$NS_REPO")"
	# What make install puts in pkglibexecdir (forge-shell(1), HARNESS RECIPES).
	mkdir "$SCRATCH/libexec"
	ln -s "$abs_top_builddir/helpers/forge-shell" "$SCRATCH/libexec/bash"
	printf '.ONESHELL:\nall:\n\t@echo "in $$(hostname)"\n\t-false\n\t+@id -u\n' >"$NS_REPO/Makefile"
	# Not the make check that runs this test: its flags (-w, -j) stay out.
	run --separate-stderr env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory SHELL="$SCRATCH/libexec/bash"
	assert_success
	assert_line --index 0 "in $NS_NAME"
	assert_line --index 1 1000
	# Why the link: under its own name make does not know forge-shell for a
	# POSIX shell and hands the later lines' prefixes to it.
	run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory SHELL="$abs_top_builddir/helpers/forge-shell"
	assert_failure
	assert_output --partial '-false: command not found'
	[ ! -e "$MSB_LOG" ]
	[ ! -e "$HOST_MARKER" ]
}
