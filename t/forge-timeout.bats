#!/usr/bin/env bats
load test_helper
setup() { load_support; forge_test_setup; }
teardown() { forge_test_teardown; }

bats_require_minimum_version 1.5.0

# is_running PID: the process exists and is not a zombie (the init of some
# containers never reaps orphans, so a dead grandchild can linger as one).
is_running() {
	local stat
	stat=$(ps -o stat= -p "$1") || return 1
	case $stat in Z*) return 1 ;; esac
}

# timed_run COMMAND...: bats' run of COMMAND; also sets elapsed, its wall
# time in ms. The tests bound it only from the behaviour: at least the
# limit (it did not fire early) and well under what the other outcome
# would take (the command's own 30 s, the 20 s grace): never a speed.
timed_run() {
	local t0
	t0=$(now_ms)
	run "$@"
	elapsed=$(($(now_ms) - t0))
}

# wait_for_file FILE: until FILE is non-empty, at most 10 s.
wait_for_file() {
	for _ in $(seq 100); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	echo "timed out waiting for $1" >&2
	return 1
}

# wait_until_gone PID: until PID no longer runs, at most 5 s.
wait_until_gone() {
	for _ in $(seq 50); do
		is_running "$1" || return 0
		sleep 0.1
	done
	echo "process $1 still running" >&2
	return 1
}

@test "passes the command's exit status through" {
	run forge-timeout 5 true
	[ "$status" -eq 0 ]
	run forge-timeout 5 false
	[ "$status" -eq 1 ]
	run forge-timeout 5 sh -c 'exit 42'
	[ "$status" -eq 42 ]
}

@test "a command killed by signal n exits 128+n" {
	run forge-timeout 5 sh -c 'kill -TERM $$'
	[ "$status" -eq 143 ]
	run forge-timeout 5 sh -c 'kill -KILL $$'
	[ "$status" -eq 137 ]
}

@test "passes arguments through unchanged, options after SECS included" {
	run forge-timeout 5 printf '%s|' -x -k 1 -- --help 'a b' "$(printf 'c\nd')" ''
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '%s|' -x -k 1 -- --help 'a b' "$(printf 'c\nd')" '')" ]
}

@test "-- before SECS ends the options" {
	run forge-timeout -- 5 sh -c 'exit 7'
	[ "$status" -eq 7 ]
}

@test "timeout: fractional SECS, exit 124, no grace wait once the group is gone" {
	timed_run forge-timeout -k 20 0.5 sleep 30
	[ "$status" -eq 124 ]
	[ "$elapsed" -ge 450 ]
	[ "$elapsed" -lt 15000 ] # not the 20 s grace
}

@test "timeout wins even when the command handles TERM and exits 0" {
	run forge-timeout -k 20 0.3 sh -c 'trap "exit 0" TERM; sleep 30'
	[ "$status" -eq 124 ]
}

@test "a command that ignores TERM is killed after the grace period" {
	timed_run forge-timeout -k 1 1 sh -c 'trap "" TERM; sleep 30'
	[ "$status" -eq 124 ]
	[ "$elapsed" -ge 1900 ]
	[ "$elapsed" -lt 20000 ] # not the command's 30 s
}

@test "-k 0 sends KILL right after TERM" {
	timed_run forge-timeout -k 0 0.3 sh -c 'trap "" TERM; sleep 30'
	[ "$status" -eq 124 ]
	[ "$elapsed" -lt 20000 ] # not the command's 30 s
}

@test "a stopped command still gets the TERM (it is continued)" {
	# The outer timeout only keeps a broken build from hanging the suite.
	timed_run timeout -s KILL 30 forge-timeout -k 20 0.3 sh -c 'kill -STOP $$; sleep 30'
	[ "$status" -eq 124 ]
	[ "$elapsed" -lt 15000 ] # not the 20 s grace
}

@test "timeout kills grandchildren that ignore TERM, after the child has exited" {
	# The child dies of TERM at once; its background grandchild ignores TERM
	# and must still be KILLed when the grace runs out.
	timed_run forge-timeout -k 1 0.5 sh -c '
		(trap "" TERM; exec sleep 30) >/dev/null 2>&1 &
		echo $! >"$1"
		wait' sh "$SCRATCH/grandchild"
	[ "$status" -eq 124 ]
	[ "$elapsed" -ge 1400 ]
	[ "$elapsed" -lt 20000 ] # not the grandchild's 30 s
	wait_until_gone "$(cat "$SCRATCH/grandchild")"
}

@test "what a command that exits by itself leaves in its group is terminated; its status is kept" {
	timed_run forge-timeout 20 sh -c 'sleep 30 >/dev/null 2>&1 & echo $! >"$1"; exit 3' sh "$SCRATCH/grandchild"
	[ "$status" -eq 3 ]
	[ "$elapsed" -lt 15000 ] # not the 20 s limit
	wait_until_gone "$(cat "$SCRATCH/grandchild")"
}

@test "a leftover that ignores TERM is killed after the grace; one that left the group (setsid) is out of reach" {
	timed_run forge-timeout -k 1 20 sh -c '
		(trap "" TERM; exec sleep 30) >/dev/null 2>&1 &
		echo $! >"$1"
		setsid sh -c "echo \$\$ >\"\$1\"; exec sleep 30" sh "$2" >/dev/null 2>&1 &
		while [ ! -s "$2" ]; do sleep 0.05; done' sh "$SCRATCH/stubborn" "$SCRATCH/escaped"
	escaped=$(cat "$SCRATCH/escaped")
	is_running "$escaped" && alive=yes || alive=no
	kill "$escaped" 2>/dev/null || :
	[ "$status" -eq 0 ]
	[ "$elapsed" -ge 900 ]
	[ "$elapsed" -lt 15000 ] # not the 20 s limit
	wait_until_gone "$(cat "$SCRATCH/stubborn")"
	[ "$alive" = yes ]
}

@test "SECS 0 means no time limit" {
	timed_run forge-timeout -k 0 0 sh -c 'sleep 1; exit 3'
	[ "$status" -eq 3 ]
	[ "$elapsed" -ge 900 ]
}

@test "the command runs in its own process group" {
	run forge-timeout 5 sh -c 'echo $$ $(ps -o pgid= -p $$)'
	[ "$status" -eq 0 ]
	read -r pid pgid <<<"$output"
	[ "$pid" -eq "$pgid" ]
	caller_pgid=$(ps -o pgid= -p "$BASHPID")
	[ "$pgid" -ne "$caller_pgid" ]
}

@test "TERM, INT, QUIT and HUP are forwarded to the command, whose status is the result" {
	for sig in INT QUIT TERM HUP; do
		rm -f "$SCRATCH/ready" "$SCRATCH/marker"
		forge-timeout 30 sh -c '
			trap "echo got-$1 >\"\$2/marker\"; exit $3" "$1"
			echo $$ >"$2/ready"
			sleep 30' sh "$sig" "$SCRATCH" 99 &
		pid=$!
		wait_for_file "$SCRATCH/ready"
		start=$(now_ms)
		kill -s "$sig" "$pid"
		status=0
		wait "$pid" || status=$?
		elapsed=$(($(now_ms) - start))
		[ "$status" -eq 99 ]
		[ "$elapsed" -lt 20000 ] # not the command's 30 s
		[ "$(cat "$SCRATCH/marker")" = "got-$sig" ]
	done
}

@test "a forwarded signal that kills the command exits 128+n" {
	for sig in INT:130 QUIT:131 TERM:143 HUP:129; do
		rm -f "$SCRATCH/ready"
		forge-timeout 30 sh -c 'echo $$ >"$1"; exec sleep 30' sh "$SCRATCH/ready" &
		pid=$!
		wait_for_file "$SCRATCH/ready"
		kill -s "${sig%:*}" "$pid"
		status=0
		wait "$pid" || status=$?
		[ "$status" -eq "${sig#*:}" ]
		wait_until_gone "$(cat "$SCRATCH/ready")"
	done
}

@test "the command starts with INT, QUIT, TERM and HUP at their defaults, even when the caller ignored them" {
	# As a background job of a non-interactive shell is (INT and QUIT), and
	# with TERM and HUP ignored on purpose.
	run sh -c 'trap "" INT QUIT TERM HUP; forge-timeout 5 grep "^SigIgn:" /proc/self/status & wait $!'
	assert_success
	ignored=$((0x${output#SigIgn:?}))
	# Bits 0-2 and 14: HUP (1), INT (2), QUIT (3), TERM (15).
	[ $((ignored & 0x4007)) -eq 0 ]
}

@test "a signal right after start is not lost" {
	# Whether it lands before the fork or after, the run must end now,
	# not when the 30 s sleep does.
	start=$(now_ms)
	forge-timeout 30 sleep 30 &
	pid=$!
	# Once the child is forge-timeout: bash loses, now and then, a signal
	# that reaches its forked child before the exec (seen 4 in 400 with a
	# plain sleep), and the run then ends with the sleep.
	for _ in $(seq 5000); do
		case $(readlink "/proc/$pid/exe" 2>/dev/null) in */forge-timeout) break ;; esac
	done
	kill -TERM "$pid"
	status=0
	wait "$pid" || status=$?
	elapsed=$(($(now_ms) - start))
	[ "$status" -eq 143 ]
	[ "$elapsed" -lt 20000 ] # not the command's 30 s
}

@test "a command that is not found exits 127 with a message" {
	run -127 --separate-stderr forge-timeout 5 forge-no-such-command
	[ "$stderr" = "forge-timeout: error: cannot run forge-no-such-command: No such file or directory" ]
	[ -z "$output" ]
}

@test "a command that cannot be executed exits 126 with a message" {
	printf 'echo hi\n' >"$SCRATCH/not-executable"
	chmod 644 "$SCRATCH/not-executable"
	run -126 --separate-stderr forge-timeout 5 "$SCRATCH/not-executable"
	[ "$stderr" = "forge-timeout: error: cannot run $SCRATCH/not-executable: Permission denied" ]
	run -126 forge-timeout 5 "$SCRATCH"
}

@test "no descriptor of its own leaks into the command; the caller's pass" {
	run sh -c 'ls /proc/self/fd'
	[ "$status" -eq 0 ]
	without=$output
	run forge-timeout 5 sh -c 'ls /proc/self/fd'
	[ "$status" -eq 0 ]
	[ "$output" = "$without" ]

	run forge-timeout 5 sh -c 'echo passed >&7' 7>"$SCRATCH/fd7"
	[ "$status" -eq 0 ]
	[ "$(cat "$SCRATCH/fd7")" = passed ]
}

@test "usage errors exit 64 with the usage on stderr" {
	run -64 --separate-stderr forge-timeout
	[[ $stderr == *"usage: forge-timeout"* ]]
	[ -z "$output" ]
	run -64 --separate-stderr forge-timeout 5
	[[ $stderr == *"missing COMMAND"*"usage: forge-timeout"* ]]
	for secs in abc -1 '' . 1e3 5s ' 5' 0x10 inf +1 1..2; do
		run -64 --separate-stderr forge-timeout "$secs" true
		[[ $stderr == *"usage: forge-timeout"* ]]
	done
	run -64 --separate-stderr forge-timeout -k x 5 true
	[[ $stderr == *"invalid grace period 'x'"* ]]
	run -64 --separate-stderr forge-timeout -k
	[[ $stderr == *"-k needs a value"* ]]
	run -64 --separate-stderr forge-timeout -z 5 true
	[[ $stderr == *"unknown option -z"*"usage: forge-timeout"* ]]
}

@test "--help prints the usage on stdout, --version the version" {
	run --separate-stderr forge-timeout --help
	[ "$status" -eq 0 ]
	[[ $output == "usage: forge-timeout [-k GRACE] SECS COMMAND [ARG...]"* ]]
	[ -z "$stderr" ]
	run --separate-stderr forge-timeout --version
	[ "$status" -eq 0 ]
	[[ $output =~ ^forge-timeout\ [^[:space:]]+$ ]]
}
