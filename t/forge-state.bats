#!/usr/bin/env bats
load test_helper
setup() { load_support; forge_test_setup; state_setup; }
teardown() { state_teardown; forge_test_teardown; }

bats_require_minimum_version 1.5.0

state_setup() {
	D="$SCRATCH/state"
	F="$D/breaker"
	mkdir -p "$D"
	HOLDER=
}

state_teardown() {
	if [ -n "${HOLDER:-}" ]; then
		kill "$HOLDER" 2>/dev/null || true
		wait "$HOLDER" 2>/dev/null || true
	fi
}

# hold_lock FILE SECS: hold FILE's lock for SECS seconds in the background,
# the way another forge-state (or util-linux flock) would; sets HOLDER. The
# subshell execs sleep, so killing HOLDER releases the lock at once.
hold_lock() {
	(flock 9 && exec sleep "$2") 9>"$1.lock" >/dev/null 2>&1 3>&- &
	HOLDER=$!
	local i
	for i in $(seq 100); do
		flock -n "$1.lock" true || return 0
		sleep 0.05
	done
	echo "the lock on $1 was never taken" >&2
	return 1
}

# no_temp_files: no .NAME.XXXXXX temporary file left in $D.
no_temp_files() {
	local left
	left=$(find "$D" -name '.*.??????' -print)
	[ -z "$left" ] || fail "temporary files left: $left"
}

# --- get / set / dump ------------------------------------------------------

@test "set then get round-trips values, including empty ones and ones with '='" {
	run forge-state set "$F" streak=3 last_verdict=FAIL note='a=b c' empty=
	assert_success
	assert_output ''
	run forge-state get "$F" streak
	assert_success
	assert_output 3
	run forge-state get "$F" note
	assert_output 'a=b c'
	run forge-state get "$F" empty
	assert_success
	assert_output ''
	assert_equal "$(cat "$F")" "$(printf 'streak=3\nlast_verdict=FAIL\nnote=a=b c\nempty=')"
	no_temp_files
}

@test "get of a missing key: DEFAULT if given, else exit 1 and no output" {
	forge-state set "$F" a=1
	run --separate-stderr forge-state get "$F" missing
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[ -z "$stderr" ]
	run forge-state get "$F" missing 'fall back'
	assert_success
	assert_output 'fall back'
}

@test "get and dump of a missing file read it as empty and create nothing but the lock" {
	run forge-state get "$F" streak 0
	assert_success
	assert_output 0
	run forge-state get "$F" streak
	[ "$status" -eq 1 ]
	run forge-state dump "$F"
	assert_success
	assert_output ''
	[ ! -e "$F" ]
	[ "$(ls -A "$D")" = breaker.lock ]
}

@test "get of a file whose directory does not exist gives DEFAULT and creates nothing" {
	run forge-state get "$SCRATCH/nowhere/breaker" streak 7
	assert_success
	assert_output 7
	run forge-state get "$SCRATCH/nowhere/breaker" streak
	[ "$status" -eq 1 ]
	[ ! -e "$SCRATCH/nowhere" ]
}

@test "set of several keys is one atomic rewrite: replaced in place, new keys appended in order" {
	need_strace
	printf 'a=1\nb=2\nc=3\n' >"$F"
	strace -f -qq -o "$SCRATCH/trace" -e trace=rename,renameat,renameat2 \
		forge-state set "$F" c=30 new1=x a=10 new2=y
	assert_equal "$(cat "$F")" "$(printf 'a=10\nb=2\nc=30\nnew1=x\nnew2=y')"
	assert_equal "$(grep -c rename "$SCRATCH/trace")" 1
	no_temp_files
}

@test "set: the last of repeated KEY=VALUE arguments wins" {
	forge-state set "$F" k=1 other=o k=2
	assert_equal "$(cat "$F")" "$(printf 'other=o\nk=2')"
}

@test "set replaces a key's first line and drops its later duplicates; get reads the first" {
	printf 'k=first\nx=1\nk=second\n' >"$F"
	run forge-state get "$F" k
	assert_output first
	forge-state set "$F" k=new
	assert_equal "$(cat "$F")" "$(printf 'k=new\nx=1')"
}

@test "lines that are not key=value are kept verbatim and in place, with one warning" {
	printf 'a=1\n# a comment\n\nnot a pair\n bad=space\nb=2\n' >"$F"
	run --separate-stderr forge-state set "$F" a=5 c=3
	assert_success
	assert_equal "$(cat "$F")" "$(printf 'a=5\n# a comment\n\nnot a pair\n bad=space\nb=2\nc=3')"
	assert_equal "$stderr" "forge-state: warning: $F:2: not a key=value line (and 2 more); kept as is"
	run --separate-stderr forge-state get "$F" b
	assert_output 2
	assert_equal "$(printf '%s\n' "$stderr" | grep -c warning)" 1
}

@test "a well-formed file produces no warning" {
	forge-state set "$F" a=1 b=2
	run --separate-stderr forge-state incr "$F" a
	assert_output 2
	assert_equal "$stderr" ''
}

@test "a last line without its newline is read and kept" {
	printf 'a=1\nb=2' >"$F"
	run forge-state get "$F" b
	assert_output 2
	forge-state set "$F" c=3
	assert_equal "$(cat "$F"; echo .)" "$(printf 'a=1\nb=2\nc=3\n.')"
}

@test "dump prints every key=value line in order, first of duplicates only" {
	printf 'b=2\njunk\na=1\nb=3\n\nc=x=y\n' >"$F"
	run --separate-stderr forge-state dump "$F"
	assert_success
	assert_equal "$output" "$(printf 'b=2\na=1\nc=x=y')"
	assert_equal "$stderr" "forge-state: warning: $F:2: not a key=value line; kept as is"
}

@test "updates keep the file's mode; a new file gets 0666 minus the umask" {
	umask 022
	forge-state set "$F" a=1
	assert_equal "$(stat -c %a "$F")" 644
	(umask 077 && forge-state set "$D/private" a=1)
	assert_equal "$(stat -c %a "$D/private")" 600
	chmod 640 "$F"
	forge-state incr "$F" a
	assert_equal "$(stat -c %a "$F")" 640
}

@test "a symlinked state file or lock is refused (73, naming it), never read or written through" {
	printf 'a=1\n' >"$D/target"
	ln -s target "$F"
	for args in 'set a=2' 'incr a' 'get a' 'dump' 'append x'; do
		read -ra words <<<"$args"
		run --separate-stderr forge-state "${words[0]}" "$F" "${words[@]:1}"
		[ "$status" -eq 73 ] || fail "$args gave $status"
		assert_equal "$stderr" "forge-state: error: $F: not a regular file (a symbolic link)"
	done
	run --separate-stderr forge-state put "$F" <<<'new'
	assert_failure 73
	[ -L "$F" ]
	assert_equal "$(cat "$D/target")" a=1
	# A dangling link is not followed to create its target either.
	ln -s "$SCRATCH/created" "$D/dangling"
	run forge-state set "$D/dangling" a=1
	assert_failure 73
	[ ! -e "$SCRATCH/created" ]
	# Nor is the lock file.
	ln -s "$SCRATCH/lock-target" "$D/other.lock"
	run --separate-stderr forge-state set "$D/other" a=1
	assert_failure 73
	assert_equal "$stderr" "forge-state: error: $D/other.lock: not a regular file (a symbolic link)"
	[ ! -e "$SCRATCH/lock-target" ]
	[ ! -e "$D/other" ]
}

@test "a 1 MB value round-trips through get and survives updates of other keys" {
	# One argument is at most 128 KiB on Linux, so the 1 MB line is written
	# directly; set carries the largest value an argument can hold.
	big=$(head -c 786432 /dev/urandom | base64 -w0)
	[ "${#big}" -eq 1048576 ]
	printf 'n=1\nbig=%s\n' "$big" >"$F"
	run forge-state get "$F" big
	assert_success
	[ "$output" = "$big" ] || fail "the 1 MB value changed"
	run forge-state incr "$F" n
	assert_output 2
	forge-state set "$F" other=x
	assert_equal "$(sha256sum <"$F")" "$(printf 'n=2\nbig=%s\nother=x\n' "$big" | sha256sum)"
	arg=${big:0:131000}
	forge-state set "$F" big="$arg"
	run forge-state get "$F" big
	[ "$output" = "$arg" ] || fail "a 131000-byte value changed"
}

# --- incr ------------------------------------------------------------------

@test "incr: missing key counts as 0, N defaults to 1, may be negative; prints the new value" {
	run forge-state incr "$F" streak
	assert_success
	assert_output 1
	run forge-state incr "$F" streak 5
	assert_output 6
	run forge-state incr "$F" streak -10
	assert_output -4
	run forge-state incr "$F" streak +4
	assert_output 0
	assert_equal "$(cat "$F")" streak=0
	no_temp_files
}

@test "incr leaves other keys and lines as they were" {
	printf 'threshold=3\n# note\nstreak=1\nlast_verdict=FAIL\n' >"$F"
	forge-state incr "$F" streak 2>/dev/null
	assert_equal "$(cat "$F")" "$(printf 'threshold=3\n# note\nstreak=2\nlast_verdict=FAIL')"
}

@test "incr of a non-integer value exits 65 naming the file and key, file unchanged" {
	printf 'streak=abc\n' >"$F"
	run --separate-stderr forge-state incr "$F" streak
	[ "$status" -eq 65 ]
	[ -z "$output" ]
	assert_equal "$stderr" "forge-state: error: $F: the value of streak is not an integer: 'abc'"
	assert_equal "$(cat "$F")" streak=abc
	for bad in '' '1.5' ' 1' '1 ' '0x10' '--1'; do
		printf 'streak=%s\n' "$bad" >"$F"
		run forge-state incr "$F" streak
		[ "$status" -eq 65 ] || fail "value '$bad' accepted"
	done
	no_temp_files
}

@test "incr that would overflow exits 65, file unchanged" {
	forge-state set "$F" n=9223372036854775806
	run forge-state incr "$F" n
	assert_output 9223372036854775807
	run forge-state incr "$F" n
	[ "$status" -eq 65 ]
	assert_output --partial 'overflow'
	run forge-state get "$F" n
	assert_output 9223372036854775807
	forge-state set "$F" n=-9223372036854775808
	run forge-state incr "$F" n -1
	[ "$status" -eq 65 ]
	forge-state set "$F" n=99999999999999999999
	run forge-state incr "$F" n
	[ "$status" -eq 65 ]
}

@test "incr with an N that is not an integer is a usage error" {
	run forge-state incr "$F" n 1.5
	[ "$status" -eq 64 ]
	run forge-state incr "$F" n ''
	[ "$status" -eq 64 ]
	[ ! -e "$F" ]
}

@test "16 concurrent writers x 10 incr lose no update" {
	forge-state set "$F" other=kept
	pids=
	for w in $(seq 16); do
		(for i in $(seq 10); do forge-state incr "$F" n >/dev/null || exit 1; done) &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086 # the PIDs
	wait_pids $pids
	run forge-state get "$F" n
	assert_output 160
	assert_equal "$(cat "$F")" "$(printf 'other=kept\nn=160')"
	no_temp_files
}

@test "16 concurrent single incr processes give exactly 16" {
	pids=
	for w in $(seq 16); do
		forge-state incr "$F" n >"$SCRATCH/out.$w" &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	run forge-state get "$F" n
	assert_output 16
	# Every process saw a different value: the increments were serialised.
	assert_equal "$(cat "$SCRATCH"/out.* | sort -n | tr '\n' ' ')" "$(seq 16 | tr '\n' ' ')"
}

# --- locking ---------------------------------------------------------------

@test "a lock held elsewhere: -w 1 gives up after about 1 s with exit 75, file unchanged" {
	forge-state set "$F" n=5
	hold_lock "$F" 10
	start=$(now_ms)
	run --separate-stderr forge-state -w 1 incr "$F" n
	elapsed=$(($(now_ms) - start))
	[ "$status" -eq 75 ]
	[ -z "$output" ]
	assert_equal "$stderr" "forge-state: error: timed out after 1 s waiting for the lock on $F.lock"
	[ "$elapsed" -ge 900 ] && [ "$elapsed" -lt 2500 ] || fail "gave up after $elapsed ms"
	run forge-state -w 0 get "$F" n
	[ "$status" -eq 75 ]
	kill "$HOLDER"
	wait "$HOLDER" || true
	HOLDER=
	run forge-state -w 1 incr "$F" n
	assert_success
	assert_output 6
}

@test "a waiting forge-state gets the lock as soon as it is released" {
	forge-state set "$F" n=1
	hold_lock "$F" 1
	start=$(now_ms)
	run forge-state -w 5 incr "$F" n
	elapsed=$(($(now_ms) - start))
	assert_success
	assert_output 2
	[ "$elapsed" -ge 300 ] && [ "$elapsed" -lt 1500 ] || fail "waited $elapsed ms"
}

@test "-w takes whole seconds: -w0, -w 3 work; -1, 1.5, x, missing are usage errors" {
	run forge-state -w0 set "$F" a=1
	assert_success
	run forge-state -w 3 get "$F" a
	assert_output 1
	for bad in -1 1.5 x '' 99999999999; do
		run --separate-stderr forge-state -w "$bad" get "$F" a
		[ "$status" -eq 64 ] || fail "-w '$bad' gave $status"
		[[ $stderr == *"forge-state: error: -w takes whole seconds"* ]]
	done
	run forge-state -w
	[ "$status" -eq 64 ]
}

@test "every descriptor is opened O_CLOEXEC and forge-state starts no process" {
	need_strace
	forge-state set "$F" n=1
	strace -f -qq -o "$SCRATCH/trace" -e trace=open,openat,creat,clone,clone3,fork,vfork,execve \
		forge-state incr "$F" n
	strace -f -qq -o "$SCRATCH/trace-append" -e trace=open,openat,creat \
		forge-state append "$D/timeline" '{}'
	cat "$SCRATCH/trace-append" >>"$SCRATCH/trace"
	grep -q "\"$F.lock\", O_RDWR|O_CREAT|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC" "$SCRATCH/trace"
	grep -q "\"$D/timeline.lock\", O_RDWR|O_CREAT|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC" "$SCRATCH/trace"
	# The lock, FILE, the temporary file, the directory: all close-on-exec.
	opens=$(grep -E "open(at)?\(.*\"$D" "$SCRATCH/trace")
	[ "$(printf '%s\n' "$opens" | wc -l)" -ge 6 ]
	if printf '%s\n' "$opens" | grep -v O_CLOEXEC; then
		fail "opened without O_CLOEXEC"
	fi
	# Syscall names at the start of a line (after the pid): a path that
	# merely contains "clone" is no process.
	if grep -E '^[0-9]+ +(clone|clone3|fork|vfork)\(' "$SCRATCH/trace"; then
		fail "forge-state started a process"
	fi
	assert_equal "$(grep -cE '^[0-9]+ +execve\(' "$SCRATCH/trace")" 1
}

@test "the caller's background child does not keep the lock held" {
	forge-state set "$F" n=1
	sleep 5 >/dev/null 2>&1 3>&- &
	child=$!
	forge-state incr "$F" n
	# The lock is free at once: nothing kept the lock descriptor.
	flock -n "$F.lock" true
	for fd in /proc/"$child"/fd/*; do
		[ "$(readlink "$fd")" != "$F.lock" ] || fail "the child holds the lock file open"
	done
	run forge-state -w 0 incr "$F" n
	assert_output 3
	kill "$child"
}

# --- crash safety ----------------------------------------------------------

@test "SIGKILLed writers never leave a torn file; readers only see the value move forward" {
	forge-state set "$F" n=0
	: >"$SCRATCH/succeeded"
	# Writer: 200 increments, every other one SIGKILLed at a random moment
	# of its life, 0 to a few hundred microseconds after its fork (a spin:
	# sleep(1) takes longer to start than forge-state to finish). A killer
	# that scans for the writer's child (pkill -P) hit too rarely.
	(
		for i in $(seq 200); do
			forge-state incr "$F" n >/dev/null 2>&1 &
			pid=$!
			if [ $((i % 2)) = 0 ]; then
				spin=$((RANDOM % 60))
				while [ "$spin" -gt 0 ]; do spin=$((spin - 1)); done
				kill -KILL "$pid" 2>/dev/null || :
			fi
			wait "$pid" && echo ok >>"$SCRATCH/succeeded"
		done
		: >"$SCRATCH/writer-done"
	) &
	writer=$!
	# Reader, in the foreground: every read is one whole n=INTEGER line.
	last=0 reads=0
	while [ ! -e "$SCRATCH/writer-done" ]; do
		content=$(cat "$F"; echo .)
		[[ $content =~ ^n=(0|[1-9][0-9]*)$'\n'\.$ ]] || fail "torn read: '$content'"
		value=${BASH_REMATCH[1]}
		[ "$value" -ge "$last" ] || fail "went back from $last to $value"
		last=$value reads=$((reads + 1))
	done
	wait "$writer"
	final=$(forge-state get "$F" n)
	succeeded=$(wc -l <"$SCRATCH/succeeded")
	echo "# reads=$reads succeeded=$succeeded final=$final" >&3
	[ "$reads" -gt 10 ]
	[ "$final" -ge "$last" ]
	# Each increment that reported success is in; none was applied twice.
	[ "$final" -ge "$succeeded" ]
	[ "$final" -le 200 ]
	[ "$succeeded" -lt 200 ] || fail "no writer was killed; the test proved nothing"
	run forge-state incr "$F" n
	assert_output $((final + 1))
	# The temporary files that kills left are gone with that update.
	no_temp_files
}

@test "SIGTERM, SIGINT or SIGHUP mid-update: the update finishes first, no temporary file is left" {
	forge-state set "$F" n=0
	: >"$SCRATCH/succeeded"
	: >"$SCRATCH/attempts"
	(
		while [ ! -e "$SCRATCH/stop" ]; do
			echo . >>"$SCRATCH/attempts"
			forge-state incr "$F" n >/dev/null 2>&1 &
			wait "$!" && echo ok >>"$SCRATCH/succeeded"
		done
		exit 0 # not the status of the last, maybe signalled, writer
	) &
	writer=$!
	# Keep signalling until 20 signals have reached a running forge-state
	# (however loaded the machine), within a minute.
	signals=(TERM INT HUP)
	hits=0 deadline=$((SECONDS + 60))
	while [ "$hits" -lt 20 ] && [ "$SECONDS" -lt "$deadline" ]; do
		sleep "0.00$((RANDOM % 5))"
		if pkill "-${signals[RANDOM % 3]}" -P "$writer" -x forge-state; then
			hits=$((hits + 1))
		fi
	done
	touch "$SCRATCH/stop"
	wait "$writer"
	[ "$hits" -ge 20 ] || fail "only $hits signals reached forge-state; the test proved nothing"
	no_temp_files
	succeeded=$(wc -l <"$SCRATCH/succeeded") attempts=$(wc -l <"$SCRATCH/attempts")
	run forge-state get "$F" n
	[ "$output" -ge "$succeeded" ]
	[ "$output" -le "$attempts" ]
}

# --- append ----------------------------------------------------------------

@test "append adds whole lines to any file, creating it" {
	umask 022
	T="$D/timeline.jsonl"
	forge-state append "$T" '{"event":"verify","n":1}'
	forge-state append "$T" '{"event":"verify","n":2}'
	forge-state append "$T" ''
	assert_equal "$(cat "$T"; echo .)" "$(printf '{"event":"verify","n":1}\n{"event":"verify","n":2}\n\n.')"
	[ -e "$T.lock" ]
	assert_equal "$(stat -c %a "$T")" 644
}

@test "append: 16 concurrent appenders x 20 lines give 320 intact lines" {
	T="$D/timeline.jsonl"
	pad=$(printf '%0500d' 0)
	pids=
	for w in $(seq 16); do
		(for i in $(seq 20); do
			forge-state append "$T" "{\"writer\":$w,\"i\":$i,\"pad\":\"$pad\"}" || exit 1
		done) &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086 # the PIDs
	wait_pids $pids
	assert_equal "$(wc -l <"$T")" 320
	assert_equal "$(grep -cE "^\{\"writer\":[0-9]+,\"i\":[0-9]+,\"pad\":\"$pad\"\}$" "$T")" 320
	assert_equal "$(sort -u "$T" | wc -l)" 320
	# Each writer's lines are all there, in its own order.
	for w in 1 8 16; do
		assert_equal "$(grep "\"writer\":$w," "$T" | sed 's/.*"i":\([0-9]*\),.*/\1/' | tr '\n' ' ')" \
			"$(seq 20 | tr '\n' ' ')"
	done
}

@test "append of a LINE with a newline is a usage error, file unchanged" {
	T="$D/timeline.jsonl"
	forge-state append "$T" first
	run forge-state append "$T" "$(printf 'two\nlines')"
	[ "$status" -eq 64 ]
	assert_output --partial 'LINE contains a newline'
	assert_equal "$(cat "$T")" first
}

@test "append to a file missing its final newline starts a fresh line" {
	T="$D/timeline.jsonl"
	printf '{"a":1}\n{"torn' >"$T"
	forge-state append "$T" '{"b":2}'
	assert_equal "$(cat "$T"; echo .)" "$(printf '{"a":1}\n{"torn\n{"b":2}\n.')"
}

@test "append FILE - reads the line from standard input, of any length" {
	T="$D/timeline.jsonl"
	# 300 KB: more than one argument may hold (128 KiB on Linux).
	line=$(head -c 300000 /dev/zero | tr '\0' x)
	printf '%s\n' "$line" | forge-state append "$T" -
	printf 'no newline' | forge-state append "$T" -
	: | forge-state append "$T" -
	assert_equal "$(sed -n 1p "$T")" "$line"
	assert_equal "$(sed -n 2p "$T")" 'no newline'
	assert_equal "$(wc -l <"$T")" 3
	run --separate-stderr forge-state append "$T" - <<<"$(printf 'two\nlines')"
	assert_failure 64
	[[ $stderr == *'LINE contains a newline'* ]]
	assert_equal "$(wc -l <"$T")" 3
}

@test "put replaces a whole file with standard input, atomically, keeping its mode" {
	P="$D/record.json"
	printf '{"a":1}\n' | forge-state put "$P"
	assert_equal "$(cat "$P")" '{"a":1}'
	chmod 600 "$P"
	printf 'x\ny\n' | forge-state put "$P"
	assert_equal "$(cat "$P"; echo .)" "$(printf 'x\ny\n.')"
	assert_equal "$(stat -c %a "$P")" 600
	no_temp_files
	run forge-state put "$P" extra
	assert_failure 64
}

@test "a FIFO, a device or a folder where FILE or FILE.lock belongs: 73 naming it, never a hang" {
	mkfifo "$F"
	for args in 'set a=1' 'incr a' 'get a' 'dump' 'append x'; do
		read -ra words <<<"$args"
		run --separate-stderr timeout 10 forge-state "${words[0]}" "$F" "${words[@]:1}"
		[ "$status" -eq 73 ] || fail "$args gave $status"
		assert_equal "$stderr" "forge-state: error: $F: not a regular file (a FIFO)"
	done
	run --separate-stderr timeout 10 forge-state put "$F" </dev/null
	assert_failure 73
	mkfifo "$D/other.lock"
	run --separate-stderr timeout 10 forge-state set "$D/other" a=1
	assert_failure 73
	assert_equal "$stderr" "forge-state: error: $D/other.lock: not a regular file (a FIFO)"
	mkdir "$D/third.lock"
	run --separate-stderr timeout 10 forge-state get "$D/third" a
	assert_failure 73
	assert_equal "$stderr" "forge-state: error: $D/third.lock: not a regular file (a directory)"
	if mknod "$D/dev" c 1 3 2>/dev/null; then # /dev/null's numbers; needs root
		run --separate-stderr timeout 10 forge-state append "$D/dev" x
		assert_failure 73
		assert_equal "$stderr" "forge-state: error: $D/dev: not a regular file (a device)"
	else
		[ "${CI:-}" != true ] || fail "CI runs as root and can make a device node"
	fi
}

@test "temporary files a killed writer left are removed by the next update, and only those" {
	forge-state set "$F" n=1
	printf 'torn' >"$D/.breaker.Ab12Cd"     # what a SIGKILLed update leaves
	printf 'keep' >"$D/.breaker.Ab12C"      # not the pattern: five letters
	printf 'keep' >"$D/.breaker.Ab12Cd.x"   # nor this
	printf 'keep' >"$D/.other.Ab12Cd"       # another file's
	printf 'keep' >"$SCRATCH/target"
	ln -s "$SCRATCH/target" "$D/.breaker.Zz99Zz" # a link: never followed or removed
	mkdir "$D/.breaker.Dd00Dd"                   # a folder: left alone
	# Not while another writer holds the lock: that one may be using it.
	hold_lock "$F" 30
	run forge-state -w 0 set "$F" n=2
	assert_failure 75
	[ -e "$D/.breaker.Ab12Cd" ]
	kill "$HOLDER" && wait "$HOLDER" || :
	HOLDER=
	forge-state set "$F" n=2
	[ ! -e "$D/.breaker.Ab12Cd" ]
	for kept in .breaker.Ab12C .breaker.Ab12Cd.x .other.Ab12Cd; do
		assert_equal "$(cat "$D/$kept")" keep
	done
	[ -L "$D/.breaker.Zz99Zz" ]
	[ -d "$D/.breaker.Dd00Dd" ]
	assert_equal "$(cat "$SCRATCH/target")" keep
	assert_equal "$(forge-state get "$F" n)" 2
}

# --- now -------------------------------------------------------------------

@test "now prints the UTC time as RFC 3339 and as a stamp, epoch ms and monotonic ms, from one reading" {
	local before after
	before=$(date -u +%s)
	run --separate-stderr forge-state now
	after=$(date -u +%s)
	assert_success
	[ -z "$stderr" ]
	[[ $output =~ ^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z\ ([0-9]{8}T[0-9]{6}Z)\ ([0-9]+)\ ([0-9]+)$ ]]
	# The stamp is the same instant as the RFC 3339 form.
	assert_equal "${BASH_REMATCH[7]}" "${BASH_REMATCH[1]}${BASH_REMATCH[2]}${BASH_REMATCH[3]}T${BASH_REMATCH[4]}${BASH_REMATCH[5]}${BASH_REMATCH[6]}Z"
	# ... and as the epoch milliseconds.
	assert_equal "$(date -u -d "@$((BASH_REMATCH[8] / 1000))" +%Y%m%dT%H%M%SZ)" "${BASH_REMATCH[7]}"
	[ "$((BASH_REMATCH[8] / 1000))" -ge "$before" ]
	[ "$((BASH_REMATCH[8] / 1000))" -le "$after" ]
}

@test "now: the monotonic milliseconds never go back; now takes no argument and no file" {
	local a b
	a=$(forge-state now | cut -d' ' -f4)
	b=$(forge-state now | cut -d' ' -f4)
	[ "$b" -ge "$a" ]
	cd "$D"
	run --separate-stderr forge-state now extra
	assert_equal "$status" 64
	[ -z "$(ls -A "$D")" ]
}

# --- usage and errors ------------------------------------------------------

@test "--help prints usage on stdout; --version prints the version" {
	run --separate-stderr forge-state --help
	assert_success
	[[ $output == "usage: forge-state [-w SECS] get FILE KEY [DEFAULT]"* ]]
	[[ $output == *"append FILE LINE"* ]]
	[[ $output == *"-w SECS"* ]]
	[ -z "$stderr" ]
	run --separate-stderr forge-state --version
	assert_success
	assert_output 'forge-state 0.1.0'
}

@test "unknown options and commands, missing or extra arguments: 64 with usage on stderr" {
	cd "$D"
	for args in '--bogus get f k' '-x get f k' 'frobnicate f' '' 'get' 'get f' 'get f k d extra' \
		'set f' 'incr f' 'incr f k 1 2' 'append f' 'append f a b' 'dump' 'dump f g'; do
		read -ra words <<<"$args"
		run --separate-stderr forge-state "${words[@]}"
		[ "$status" -eq 64 ] || fail "'forge-state $args' gave $status"
		[ -z "$output" ]
		[[ $stderr == "forge-state: error: "*$'\n'"usage: forge-state "* ]] || fail "stderr: $stderr"
	done
	[ -z "$(ls -A "$D")" ]
}

@test "invalid keys and values with a newline are usage errors; nothing is written" {
	for key in 'a b' 'a/b' '' 'k=v' 'ä' "\$x"; do
		run forge-state get "$F" "$key"
		[ "$status" -eq 64 ] || fail "get of key '$key' gave $status"
		run forge-state incr "$F" "$key"
		[ "$status" -eq 64 ] || fail "incr of key '$key' gave $status"
	done
	run forge-state set "$F" 'bad key=1'
	[ "$status" -eq 64 ]
	run forge-state set "$F" =1
	[ "$status" -eq 64 ]
	run forge-state set "$F" noequals
	[ "$status" -eq 64 ]
	run forge-state set "$F" ok=1 "multi=$(printf 'a\nb')"
	[ "$status" -eq 64 ]
	assert_output --partial 'the value of multi contains a newline'
	[ ! -e "$F" ]
	run forge-state set "$F" A-Z.a_z-0.9=ok
	assert_success
}

@test "FILE under a path component that is a file: 73 for updates" {
	touch "$SCRATCH/notadir"
	for args in 'set k=v' 'incr k' 'append line'; do
		read -ra words <<<"$args"
		run --separate-stderr forge-state "${words[0]}" "$SCRATCH/notadir/state" "${words[1]}"
		[ "$status" -eq 73 ] || fail "$args gave $status"
		[[ $stderr == "forge-state: error: cannot open lock file $SCRATCH/notadir/state.lock: Not a directory" ]]
	done
	run forge-state get "$SCRATCH/notadir/state" k
	[ "$status" -eq 73 ]
}

@test "updates in a directory that does not exist: 73, nothing created" {
	run --separate-stderr forge-state set "$SCRATCH/nowhere/state" k=v
	[ "$status" -eq 73 ]
	assert_equal "$stderr" "forge-state: error: cannot open lock file $SCRATCH/nowhere/state.lock: No such file or directory"
	[ ! -e "$SCRATCH/nowhere" ]
}

@test "FILE that is a directory: a clear error, exit 73, nothing left behind" {
	mkdir "$F"
	for args in 'set k=v' 'incr k' 'get k' 'dump'; do
		read -ra words <<<"$args"
		run --separate-stderr forge-state "${words[0]}" "$F" "${words[@]:1}"
		[ "$status" -eq 73 ] || fail "$args gave $status"
		assert_equal "$stderr" "forge-state: error: $F: not a regular file (a directory)"
	done
	run forge-state append "$F" line
	[ "$status" -eq 73 ]
	no_temp_files
}

@test "a directory where no file can be created: 73, file unchanged" {
	# Tests run as root, which chmod does not stop; an immutable directory
	# does, where chattr works.
	command -v chattr >/dev/null || skip "chattr not installed"
	forge-state set "$F" n=1
	chattr +i "$D" 2>/dev/null || skip "chattr +i not supported here"
	run --separate-stderr forge-state incr "$F" n
	chattr -i "$D"
	[ "$status" -eq 73 ]
	assert_equal "$stderr" "forge-state: error: cannot create a temporary file next to $F: Operation not permitted"
	assert_equal "$(cat "$F")" n=1
	no_temp_files
}
