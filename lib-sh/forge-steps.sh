# forge-steps.sh — the step runner shared by verify and setup steps: the
# steps read in one jq run, each run bounded by forge-timeout with its log
# kept as evidence (SPEC 3.2), the status line, signals, and the step's
# report on stderr.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_steps_queue STEPS DEFAULT_TIMEOUT KEY: reads every step of STEPS (a
# JSON array of {name, run, timeout}; KEY names it in messages: verify.steps,
# verify.isolated.setup) in one jq run into forge_step_queue, which
# forge_step_next hands out step by step. Exits 65 naming the key when a step
# is malformed (before any step runs).
forge_steps_queue() {
	# Per step: "TIMEOUT<TAB>FILE<TAB>LINES<TAB>NAME", then its run text in
	# LINES lines (it may hold newlines and tabs; never a NUL).
	forge_step_queue=$(printf '%s' "$1" | jq -r --argjson t "$2" --arg key "$3" '
		[ to_entries[] | .key as $i | .value as $s | "\($key)[\($i)]" as $k
		  | if ($s.run | type) != "string" or $s.run == "" then {e: "\($k).run: a non-empty shell command is required"}
		    elif $s.timeout != null and (($s.timeout | type) != "number" or $s.timeout <= 0) then {e: "\($k).timeout: expected a positive number of seconds"}
		    else ($s.name // "step\($i + 1)" | tostring) as $n
		      | {p: "\($s.timeout // $t)\t\($n | gsub("[^A-Za-z0-9._-]"; "_"))\t\($s.run | split("\n") | length)\t\($n | gsub("[\u0000-\u001f\u007f-\u009f]"; " "))\n\($s.run)"}
		    end ] as $steps
		| ([$steps[] | .e // empty] | first) as $bad
		| if $bad then "E\t\($bad)" else $steps[].p end') || forge_die 70 "jq failed while reading $3"
	case $forge_step_queue in
	"E	"*) forge_die 65 "configuration: key ${forge_step_queue#??}" ;;
	esac
}

# forge_step_next: takes the next step of forge_step_queue (forge_steps_queue) into
# forge_step_timeout, forge_step_file (a file-name-safe form of the name),
# forge_step_name and forge_step_run; returns 1 when none is left.
forge_step_next() {
	local line lines sep
	[ -n "$forge_step_queue" ] || return 1
	line=${forge_step_queue%%"
"*}
	forge_step_queue=${forge_step_queue#*"
"}
	forge_step_timeout=${line%%"	"*}
	line=${line#*"	"}
	forge_step_file=${line%%"	"*}
	line=${line#*"	"}
	lines=${line%%"	"*}
	forge_step_name=${line#*"	"}
	forge_step_run='' sep=''
	while [ "$lines" -gt 0 ]; do
		forge_step_run=$forge_step_run$sep${forge_step_queue%%"
"*}
		sep='
'
		case $forge_step_queue in
		*"
"*) forge_step_queue=${forge_step_queue#*"
"} ;;
		*) forge_step_queue= ;;
		esac
		lines=$((lines - 1))
	done
}

# forge_step KIND N FILE NAME RUN TIMEOUT COMMAND [ARG...]: runs step N
# (1-based) of KIND, Verify or Setup, in forge_exec_dir and reports it
# (forge_step_report): its log is N-FILE.log in the run folder
# (setup-N-FILE.log for a setup step; FILE is the name reduced to
# [A-Za-z0-9._-], never a path). A verify step's failure is classified
# (forge_step_classify); a setup step's is an ERROR, and a signal during
# setup ends the run at once. Sets what forge_step_exec sets, and
# forge_step_result (forge_step_result).
forge_step() {
	local kind n file name run timeout label
	kind=$1 n=$2 file=$3 name=$4 run=$5 timeout=$6
	shift 6
	[ "$kind" = Verify ] || n=setup-$n
	label=$(forge_step_label "$kind" "$name" "$run")
	if [ "${forge_verbose:-0}" = 1 ] && [ "${forge_quiet:-0}" != 1 ]; then
		printf '%s\n' "$label" >&2
	fi
	forge_run_log "$n" "$file"
	forge_step_exec "$label" "$forge_run_log" "$timeout" "$@"
	if [ "$kind" = Verify ]; then
		forge_step_classify "$run" "${forge_exec_isolated:-false}"
	else
		forge_step_hint=
		forge_exit_signal
	fi
	forge_step_result "$kind"
	forge_step_report "$kind" "$name" "$run" \
		".forge/runs/$forge_run_id/$n-$file.log"
}

# forge_step_result KIND: sets forge_step_result to how the step that just
# ran ended, as its report says it: ok; for a verify step FAIL timeout, FAIL
# exit N or ERROR REASON; for a setup step (which has no verdict of its own)
# ERROR timeout or ERROR exit N.
forge_step_result() {
	case $1:$forge_step_reason in
	*:) forge_step_result=ok ;;
	Verify:timeout) forge_step_result="FAIL timeout" ;;
	Verify:exit) forge_step_result="FAIL exit $forge_step_exit" ;;
	Verify:*) forge_step_result="ERROR $forge_step_reason" ;;
	*:timeout) forge_step_result="ERROR timeout" ;;
	*) forge_step_result="ERROR exit $forge_step_exit" ;;
	esac
}

# forge_step_exec LABEL LOG TIMEOUT COMMAND [ARG...]: runs one step in
# forge_exec_dir, bounded by forge-timeout (TERM to its process group, KILL
# 5 s later; whatever the step leaves in its group when it exits goes the
# same way), its output in LOG (and on stderr as well with forge_verbose=1).
# On a terminal the status line shows LABEL (the step's "Verify: NAME
# (RUN)"; LOG's name when empty). The warm slot's lock
# (fd 9) is closed for the step, so nothing it leaves running can hold the
# slot.
# Sets forge_step_exit, forge_step_ms and forge_step_reason: empty on
# success, else "exit", "timeout", "not executable" (126), "not found" (127)
# or "interrupted" (a signal reached forge-verify). The step runs in the
# background so that a signal trap (see forge_interrupt) can forward the
# signal while the shell waits.
forge_step_exec() {
	local label limit start tee_job filter_job fifo show stream
	label=$1 forge_step_log=$2 limit=$3
	shift 3
	forge_step_header "$forge_step_log"
	forge_ms_now
	start=$forge_mono_ms
	if [ "${forge_verbose:-0}" = 1 ]; then
		fifo=$forge_step_log.fifo show=$forge_step_log.show
		rm -f -- "$fifo" "$show"
		mkfifo -m 600 -- "$fifo" "$show" ||
			forge_die 73 "cannot create $fifo"
		# tee keeps the raw bytes in the log and passes them on to be shown
		# (forge_printable_lines: the terminal never obeys them). The FIFO
		# goes away when tee is done: that is how forge_tee_finish tells a
		# finished tee from one kept waiting by an escaped process. Without
		# tee, the one writer, the filter sees the end of its input.
		(
			forge_printable_lines '| ' <"$show" >&2 &
			filter_job=$!
			tee -a -- "$forge_step_log" <"$fifo" >"$show" &
			tee_job=$!
			trap 'kill "$tee_job" 2>/dev/null' TERM
			wait "$tee_job" || wait "$tee_job" || :
			wait "$filter_job" || :
			rm -f -- "$fifo" "$show"
		) 9>&- &
		stream=$!
		(cd -- "$forge_exec_dir" && forge_contain_exec "$limit" "$@") \
			</dev/null >"$fifo" 2>&1 9>&- &
	else
		forge_status_start "${label:-${forge_step_log##*/}}"
		(cd -- "$forge_exec_dir" && forge_contain_exec "$limit" "$@") \
			</dev/null >>"$forge_step_log" 2>&1 9>&- &
	fi
	forge_step_pid=$!
	# wait returns early when a trapped signal arrives; the step is done only
	# once it has been reaped (kill -0 fails).
	while :; do
		forge_step_exit=0
		wait "$forge_step_pid" || forge_step_exit=$?
		kill -0 "$forge_step_pid" 2>/dev/null || break
	done
	forge_step_pid=
	forge_ms_now
	forge_step_ms=$((forge_mono_ms - start))
	if [ "${forge_verbose:-0}" = 1 ]; then
		forge_tee_finish "$fifo" "$show" "$stream"
	else
		forge_status_stop
	fi
	forge_secs_to_ms "$limit"
	case $forge_step_exit in
	0) forge_step_reason= ;;
	124)
		# forge-timeout says 124 for a timeout, but so may the step itself:
		# only a step that lasted its whole limit timed out.
		if [ -z "$forge_limit_ms" ] || [ "$forge_step_ms" -ge "$forge_limit_ms" ]; then
			forge_step_reason=timeout
		else
			forge_step_reason='exit'
		fi ;;
	126) forge_step_reason='not executable' ;;
	127) forge_step_reason='not found' ;;
	*) forge_step_reason='exit' ;;
	esac
	forge_signal_untrapped "$forge_step_exit"
	[ -z "${forge_signal:-}" ] || forge_step_reason=interrupted
}

# forge_secs_to_ms SECS: sets forge_limit_ms to a decimal number of seconds
# in milliseconds (rounded down), or to nothing when SECS is not plain digits
# with an optional fraction.
forge_secs_to_ms() {
	local whole frac
	forge_limit_ms=
	case $1 in '' | . | *[!0-9.]* | *.*.*) return 0 ;; esac
	whole=${1%%.*} frac=
	case $1 in *.*) frac=${1#*.} ;; esac
	frac=${frac}000
	frac=${frac%"${frac#???}"}
	# Leading zeros would make $(( )) read octal.
	while :; do
		case $whole in 0?*) whole=${whole#0} ;; *) break ;; esac
	done
	while :; do
		case $frac in 0?*) frac=${frac#0} ;; *) break ;; esac
	done
	forge_limit_ms=$((${whole:-0} * 1000 + frac))
}

# forge_step_header LOG: in a copy (--isolated), starts LOG with the one line
# that names the copy's folder, so that a path of the copy in the output (a
# stack trace) can be read back as a path of the repository; the step's
# output is appended after it.
forge_step_header() {
	[ -n "${forge_copy_dir:-}" ] && [ "$forge_exec_dir" = "$forge_copy_dir" ] || return 0
	printf 'forge-verify: the step runs in a copy of the repository: %s\n' "$forge_copy_dir" >>"$1" ||
		forge_die 73 "cannot write $1"
}

# forge_status_start LABEL: on a terminal (stderr), and neither quiet nor
# verbose, shows "LABEL 12s" on one line, updated once a second, until
# forge_status_stop. Off a terminal it does nothing.
forge_status_start() {
	local label secs sleeper
	forge_status_pid=
	[ "${forge_quiet:-0}" != 1 ] && [ "${forge_verbose:-0}" != 1 ] && [ -t 2 ] || return 0
	# A long command line must not wrap: the line could not be erased.
	label=$(printf '%s' "$1" | tr '\000-\037' ' ' | cut -c 1-70)
	(
		sleeper=
		trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
		secs=0
		while :; do
			printf '\r\033[K%s %ss' "$label" "$secs" >&2
			sleep 1 &
			sleeper=$!
			wait "$sleeper"
			secs=$((secs + 1))
		done
	) </dev/null >/dev/null 9>&- &
	forge_status_pid=$!
}

# forge_status_stop: ends the status line of forge_status_start and erases it.
forge_status_stop() {
	[ -n "${forge_status_pid:-}" ] || return 0
	# KILL, not TERM: a TERM that reaches the subshell between its fork and
	# its own trap (the parent's traps still set) is lost in dash, and the
	# wait below then never returned (a step that ends at once, on a tty).
	kill -KILL "$forge_status_pid" 2>/dev/null || :
	wait "$forge_status_pid" 2>/dev/null || :
	forge_status_pid=
	printf '\r\033[K' >&2
}

# forge_tee_finish FIFO SHOW PID: waits for the -v stream (subshell PID,
# reading FIFO, passing it on through SHOW) of the step that just ended. Its
# process group is gone by now (forge-timeout saw to it), so what still
# holds the output open escaped it (setsid): tee gets a second at most, so
# the step's timeout holds whatever such a process does.
forge_tee_finish() {
	local n
	n=0
	while [ -p "$1" ] && [ "$n" -lt 10 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	[ ! -p "$1" ] || kill "$3" 2>/dev/null || :
	wait "$3" || :
	rm -f -- "$1" "$2"
}

# forge_interrupt SIGNAL: for a trap on INT, TERM or HUP. Forwards SIGNAL to
# the running step (forge-timeout passes it to the step's process group) and
# remembers it in forge_signal; with no step running, exits 128+n at once.
forge_interrupt() {
	forge_signal=$1
	if [ -n "${forge_step_pid:-}" ]; then
		kill -s "$1" "$forge_step_pid" 2>/dev/null || :
	else
		forge_exit_signal
	fi
}

# forge_signal_untrapped STATUS: a signal that was ignored when forge-verify
# started (a non-interactive shell starts its background jobs with INT
# ignored) cannot be trapped by a shell, so forge_interrupt never hears of
# it; forge-timeout catches it all the same and passes it to the step. When
# the step then ends with STATUS 128+n of such a signal (HUP, INT, TERM),
# the run was interrupted by it as surely as through the trap: sets
# forge_signal, whatever dispositions forge-verify inherited (SPEC 3.1).
forge_signal_untrapped() {
	local key value ignored
	[ -z "${forge_signal:-}" ] || return 0
	case $1 in
	129) set -- HUP 1 ;;
	130) set -- INT 2 ;;
	143) set -- TERM 16384 ;;
	*) return 0 ;;
	esac
	ignored=
	while IFS=' 	' read -r key value; do
		[ "$key" != SigIgn: ] || ignored=$value
	done 2>/dev/null </proc/$$/status || :
	case $ignored in '' | *[!0-9a-fA-F]*) return 0 ;; esac
	# The low 32 bits hold HUP, INT and TERM (the mask is 16 hex digits).
	case $ignored in ????????????????) ignored=${ignored#????????} ;; esac
	[ $((0x$ignored & $2)) -eq 0 ] || forge_signal=$1
}

# forge_exit_signal: exits 128+n when a signal was caught (forge_interrupt).
forge_exit_signal() {
	[ -n "${forge_signal:-}" ] || return 0
	case $forge_signal in
	HUP) exit 129 ;;
	INT) exit 130 ;;
	TERM) exit 143 ;;
	*) exit 130 ;;
	esac
}

# forge_step_label KIND NAME RUN: prints the start of a step's progress
# line, "KIND: NAME (RUN)", on one line and shown, not obeyed
# (forge_printable: NAME and RUN come from a configuration or a command line
# that may hold escape sequences).
forge_step_label() {
	local label
	label="$1: $2 ($3)"
	# Plain text needs no jq (most labels); anything else goes through it.
	case $label in
	*[![:alnum:][:punct:]\ ]*) printf '%s' "$label" | forge_printable ;;
	*) printf '%s\n' "$label" ;;
	esac
}

# forge_shell_quote ARG...: sets forge_quoted to ARG... as one line of POSIX
# shell that gives them back, exactly, when pasted: each word left bare when
# it holds only characters no shell treats specially, else in single quotes
# (a ' inside as '\''). "sh -c './configure && make test'" stays just that.
forge_shell_quote() {
	local arg rest sep word
	forge_quoted='' sep=''
	for arg in "$@"; do
		case $arg in
		'' | *[!A-Za-z0-9_@%+=:,./-]*)
			rest=$arg word=
			while :; do
				case $rest in
				*\'*)
					word="$word${rest%%\'*}'\\''"
					rest=${rest#*\'} ;;
				*)
					word=$word$rest
					break ;;
				esac
			done
			word="'$word'" ;;
		*) word=$arg ;;
		esac
		forge_quoted=$forge_quoted$sep$word
		sep=' '
	done
}

# forge_step_report KIND NAME RUN LOG: prints the step's progress line on
# stderr, "KIND: NAME (RUN) RESULT TIME" (RESULT: forge_step_result);
# when it failed, the last 40 lines of its output (unless they were streamed
# with -v) and the path of LOG, relative to the repository root. With -v the
# step's line also went out before its output. Output lines are shown after
# "| " (forge_printable_lines), so none can pass for a line of forge's own.
# The files a failing verify step's output names are kept as evidence
# (forge_evidence_keep), whatever is printed.
forge_step_report() {
	forge_evidence_shown=
	if [ "$1" = Verify ]; then
		case $forge_step_reason in '' | interrupted) ;; *) forge_evidence_keep ;; esac
	fi
	[ "${forge_quiet:-0}" = 1 ] && return 0
	printf '%s %s %s\n' "$(forge_step_label "$1" "$2" "$3")" "$forge_step_result" \
		"$(forge_fmt_secs "$forge_step_ms")" >&2
	case $forge_step_reason in '' | interrupted) return 0 ;; esac
	[ "${forge_verbose:-0}" = 1 ] || forge_step_tail | forge_printable_lines '| ' >&2
	[ -z "$forge_evidence_shown" ] || printf '%s' "$forge_evidence_shown" >&2
	printf 'log: %s\n' "$4" >&2
}

# forge_step_tail: prints the last 40 lines of the step that just ran (its
# log, forge_step_log, less forge_step_header's line).
forge_step_tail() {
	if [ -n "${forge_copy_dir:-}" ] && [ "$forge_exec_dir" = "$forge_copy_dir" ]; then
		tail -n +2 -- "$forge_step_log" | tail -n 40
	else
		tail -n 40 -- "$forge_step_log"
	fi
}
