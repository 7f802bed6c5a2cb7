#!/usr/bin/env bats
# The C helpers under valgrind: every command and the main error paths, with
# no memory error and no definite leak (valgrind exits 99 on either).
load test_helper

setup() {
	load_support
	forge_test_setup
	need valgrind
	H=$abs_top_builddir/helpers
	F=$SCRATCH/state
}
teardown() { forge_test_teardown; }

# vg STATUS HELPER ARG...: runs HELPER under valgrind, expecting STATUS.
vg() {
	local want=$1
	shift
	run "-$want" valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--trace-children=no "$@"
}

@test "forge-state under valgrind" {
	vg 0 "$H/forge-state" set "$F" a=1 b=two
	printf 'junk line\n' >>"$F"
	vg 0 "$H/forge-state" set "$F" a=2
	vg 0 "$H/forge-state" incr "$F" n 5
	vg 0 "$H/forge-state" get "$F" a
	vg 1 "$H/forge-state" get "$F" missing
	vg 0 "$H/forge-state" dump "$F"
	vg 0 "$H/forge-state" append "$SCRATCH/lines" '{"x":1}'
	vg 0 "$H/forge-state" append "$SCRATCH/lines" - <<<'{"x":2}'
	printf 'stale' >"$SCRATCH/.rec.Ab12Cd"
	vg 0 "$H/forge-state" put "$SCRATCH/rec" <<<'{"x":3}'
	mkfifo "$SCRATCH/fifo"
	vg 73 "$H/forge-state" get "$SCRATCH/fifo" a
	vg 65 "$H/forge-state" incr "$F" b
	vg 64 "$H/forge-state" set "$F" 'bad key=1'
	vg 64 "$H/forge-state" bogus
	vg 73 "$H/forge-state" set "$F/not-a-dir/x" a=1
	vg 0 "$H/forge-state" --help
}

@test "forge-timeout under valgrind" {
	vg 0 "$H/forge-timeout" 5 true
	vg 3 "$H/forge-timeout" 5 sh -c 'exit 3'
	vg 124 "$H/forge-timeout" -k 1 0.5 sleep 10
	vg 127 "$H/forge-timeout" 5 /nonexistent/cmd
	vg 64 "$H/forge-timeout" abc true
}

@test "forge-index-tree under valgrind" {
	git init -q "$SCRATCH/repo"
	mkdir -p "$SCRATCH/repo/a/b"
	echo 1 >"$SCRATCH/repo/a/b/f"
	git -C "$SCRATCH/repo" add a
	vg 1 "$H/forge-index-tree" "$SCRATCH/repo/.git/index"
	git -C "$SCRATCH/repo" write-tree >/dev/null
	vg 0 "$H/forge-index-tree" "$SCRATCH/repo/.git/index"
	git -C "$SCRATCH/repo" update-index --index-version 4
	vg 0 "$H/forge-index-tree" -- "$SCRATCH/repo/.git/index"
	head -c 50 "$SCRATCH/repo/.git/index" >"$SCRATCH/cut"
	vg 65 "$H/forge-index-tree" "$SCRATCH/cut"
	vg 74 "$H/forge-index-tree" "$SCRATCH/missing"
	vg 64 "$H/forge-index-tree"
}

@test "forge-netrule under valgrind" {
	vg 0 "$H/forge-netrule" example.com '*.example.org' 'bad:443' 'domain=intra'
	vg 0 "$H/forge-netrule" --json example.com 'a,b.com'
	vg 0 "$H/forge-netrule" '*'
	vg 1 "$H/forge-netrule" --check 'nodot'
	seq 1 2000 | sed 's/$/.example.com/' >"$SCRATCH/many"
	run valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		"$H/forge-netrule" <"$SCRATCH/many"
	assert_success
	vg 64 "$H/forge-netrule" --bogus
}

@test "forge-shell under valgrind (up to its exec)" {
	# (Statically linked with musl, valgrind still checks every access, but
	# cannot see musl's malloc: there is nothing for it to leak-check anyway.)
	FORGE_SANDBOX_CONTAINER= FORGE_HOST_SHELL=/bin/true vg 0 "$H/forge-shell" -c true
	FORGE_SANDBOX_CONTAINER=forge-x FORGE_MSB=/nonexistent vg 127 "$H/forge-shell" -c true
}

@test "forge-seccomp and forge-sandbox-init under valgrind" {
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		"$H/forge-seccomp" >"$SCRATCH/filter.bpf"
	[ -s "$SCRATCH/filter.bpf" ]
	vg 64 "$H/forge-seccomp" extra
	vg 0 "$H/forge-sandbox-init" --help
	vg 64 "$H/forge-sandbox-init" bogus
	vg 64 "$H/forge-sandbox-init" serve 999
	vg 64 "$H/forge-sandbox-init" start "$SCRATCH/sock" 2 -- true
	vg 0 "$H/forge-sandbox-init" start --cpus 1 "$SCRATCH/sock" 7 -- sh -c 'test -S "$0" && exec 7>&-' "$SCRATCH/sock"
	vg 73 "$H/forge-sandbox-init" start "$SCRATCH/sock" 7 -- true
}

@test "forge-shell's namespace-sandbox client under valgrind: a real sandbox, and one that does not answer" {
	export XDG_STATE_HOME=$HOME/.local/state
	mkdir -p "$XDG_STATE_HOME/forge/bwrap/forge-silent" "$XDG_CONFIG_HOME/forge"
	FORGE_SANDBOX_CONTAINER=forge-silent vg 127 "$H/forge-shell" -c true
	printf '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}}}\n' >"$XDG_CONFIG_HOME/forge/config.json"
	forge_test_repo
	name=$(forge-sandbox up 2>/dev/null)
	FORGE_SANDBOX_CONTAINER=$name vg 42 "$H/forge-shell" -c 'exit 42'
	FORGE_SANDBOX_CONTAINER=$name vg 0 "$H/forge-shell" --exec-kill-group true
	# Terminal mode: the pty inside, without and with a terminal outside.
	FORGE_SANDBOX_CONTAINER=$name vg 3 "$H/forge-shell" --exec-tty sh -c 'tty; exit 3' </dev/null
	assert_output --partial /dev/pts/
	FORGE_SANDBOX_CONTAINER=$name run -3 python3 "$abs_top_srcdir/t/pty-driver.py" 24 80 -- \
		valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		"$H/forge-shell" -c 'stty size; exit 3' </dev/null
	assert_output --partial '24 80'
	forge-sandbox rm >/dev/null 2>&1
}

# ask SOCKET REQUEST: sends the raw REQUEST to a unix socket, prints the answer.
ask() {
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode("latin-1"))
print(s.makefile("rb").read().decode("latin-1"), end="")' "$@"
}

@test "forge-egress under valgrind, parent and children (every refusal path)" {
	printf 'domain=localhost\n*.example.com\nbad:1\n' >"$SCRATCH/rules"
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--trace-children=yes --log-file="$SCRATCH/vg.%p" \
		"$H/forge-egress" --log "$SCRATCH" "$SCRATCH/s" "$SCRATCH/rules" 2>"$SCRATCH/err" 3>&- &
	pid=$!
	for _ in $(seq 1 100); do [ -S "$SCRATCH/s" ] && break; sleep 0.1; done
	run ask "$SCRATCH/s" $'GET http://localhost/ HTTP/1.1\r\n\r\n'
	assert_output --partial 'which is not public (loopback)'
	run ask "$SCRATCH/s" $'CONNECT other.org:443 HTTP/1.1\r\n\r\n'
	assert_output --partial 'not in the allow-list'
	run ask "$SCRATCH/s" $'CONNECT [::1]:443 HTTP/1.1\r\n\r\n'
	assert_output --partial 'IP literal'
	run ask "$SCRATCH/s" $'GET /x HTTP/1.1\r\nHost: a.example.com\r\n\r\n'
	assert_output --partial '400 Bad Request'
	run ask "$SCRATCH/s" $'CONNECT nx.example.com:443 HTTP/1.1\r\n\r\n'
	assert_output --partial 'cannot resolve'
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 143
	run cat "$SCRATCH"/vg.*
	assert_output ''
	run grep -c . "$SCRATCH/egress.log"
	assert_output 5
}

@test "forge-relay under valgrind (argument errors)" {
	vg 64 "$H/forge-relay" 127.0.0.1 "$SCRATCH/s"
	vg 64 "$H/forge-relay" --bogus
	vg 0 "$H/forge-relay" --help
}
