# forge-verify.sh — what to run and how: step detection (SPEC 3.1), running
# each step bounded by forge-timeout with its log kept as evidence (3.2), and
# the verdict. Part of forge.sh; source that, not this file.
# shellcheck shell=sh

# forge_makefile_has_target FILE TARGET: true when FILE defines TARGET as a
# rule target (also among several targets, or as a double-colon rule), not
# as a variable (TARGET := ...).
forge_makefile_has_target() {
	grep -Eq "^([^:#=[:space:]]+[[:space:]]+)*$2([[:space:]]+[^:#=[:space:]]+)*[[:space:]]*::?([^=]|\$)" "$1"
}

# forge_steps_detect ROOT: sets forge_steps to a JSON array of steps detected
# from the files at ROOT (first match wins); returns 1 when nothing matches.
forge_steps_detect() {
	forge_steps=
	for forge_mk in "$1/GNUmakefile" "$1/makefile" "$1/Makefile"; do
		[ -f "$forge_mk" ] || continue
		if forge_makefile_has_target "$forge_mk" check; then
			forge_steps='[{"name":"build","run":"make"},{"name":"test","run":"make check"}]'
		elif forge_makefile_has_target "$forge_mk" test; then
			forge_steps='[{"name":"build","run":"make"},{"name":"test","run":"make test"}]'
		else
			forge_steps='[{"name":"build","run":"make"}]'
		fi
		return 0
	done
	if [ -f "$1/package.json" ]; then
		# shellcheck disable=SC2016 # a jq program, not shell
		forge_steps=$(jq -c '
			if type != "object" then error("expected a JSON object") else . end
			| (.scripts // {}) as $s
			| [ (if ($s.build | type) == "string" then {name: "build", run: "npm run build"} else empty end),
			    (if ($s.test | type) == "string" then {name: "test", run: "npm test"} else empty end) ]
			' "$1/package.json" 2>&1) ||
			forge_die 65 "$1/package.json: cannot detect steps: $forge_steps"
		[ "$forge_steps" = '[]' ] || return 0
	fi
	if [ -f "$1/Cargo.toml" ]; then
		forge_steps='[{"name":"build","run":"cargo build"},{"name":"test","run":"cargo test"}]'
	elif [ -f "$1/go.mod" ]; then
		forge_steps='[{"name":"build","run":"go build ./..."},{"name":"test","run":"go test ./..."}]'
	elif [ -f "$1/pyproject.toml" ] || [ -f "$1/setup.py" ] || [ -f "$1/pytest.ini" ] || [ -f "$1/tox.ini" ]; then
		forge_steps='[{"name":"test","run":"python3 -m pytest"}]'
	elif [ -f "$1/configure.ac" ]; then
		forge_steps='[{"name":"build","run":"autoreconf -fi && ./configure && make"},{"name":"test","run":"make check"}]'
	else
		forge_steps=
		return 1
	fi
}

# forge_steps_select ROOT: sets forge_steps from verify.steps in the merged
# configuration, else from detection. Exits 64 when there is nothing to run.
forge_steps_select() {
	forge_steps=$(forge_config_get verify.steps)
	case $forge_steps in '' | '[]') ;; *) return 0 ;; esac
	forge_steps_detect "$1" ||
		forge_die 64 "no verification steps found: add verify.steps to forge.json or pass -- COMMAND"
}

# forge_step_get INDEX DEFAULT_TIMEOUT: sets forge_step_name, forge_step_run,
# forge_step_timeout and forge_step_file (a file-name-safe form of the name)
# for step INDEX (0-based) of forge_steps. Exits 65 naming the key when the
# step is malformed.
forge_step_get() {
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_step_out=$(printf '%s' "$forge_steps" | jq -r --argjson i "$1" --argjson t "$2" '
		.[$i] as $s | "verify.steps[\($i)]" as $k
		| if ($s.run | type) != "string" or $s.run == "" then "E\t\($k).run: a non-empty shell command is required"
		  elif $s.timeout != null and (($s.timeout | type) != "number" or $s.timeout <= 0) then "E\t\($k).timeout: expected a positive number of seconds"
		  else ($s.name // "step\($i + 1)" | tostring) as $n
		    | "\($s.timeout // $t)\t\($n | gsub("[^A-Za-z0-9._-]"; "_"))\t\($n | gsub("[\u0000-\u001f]"; " "))\n\($s.run)"
		  end') || forge_die 70 "jq failed while reading verify.steps"
	case $forge_step_out in
	"E	"*) forge_die 65 "configuration: key ${forge_step_out#??}" ;;
	esac
	forge_step_timeout=${forge_step_out%%"	"*}
	forge_step_out=${forge_step_out#*"	"}
	forge_step_file=${forge_step_out%%"	"*}
	forge_step_out=${forge_step_out#*"	"}
	forge_step_name=${forge_step_out%%"
"*}
	forge_step_run=${forge_step_out#*"
"}
}

# forge_step_exec LOG TIMEOUT COMMAND [ARG...]: runs one step in
# forge_exec_dir, bounded by forge-timeout (TERM to its process group, KILL
# 5 s later), its output in LOG (and on stderr as well with forge_verbose=1).
# The warm slot's lock (fd 9) is closed for the step, so nothing it leaves
# running can hold the slot.
# Sets forge_step_exit, forge_step_ms and forge_step_reason (empty, "exit"
# or "timeout"). The step runs in the background so that a signal trap (see
# forge_interrupt) can forward the signal while the shell waits.
forge_step_exec() {
	forge_step_log=$1 forge_step_limit=$2
	shift 2
	forge_ms_now
	forge_step_start=$forge_ms
	if [ "${forge_verbose:-0}" = 1 ]; then
		rm -f -- "$forge_step_log.fifo"
		mkfifo -- "$forge_step_log.fifo" || forge_die 73 "cannot create $forge_step_log.fifo"
		tee -- "$forge_step_log" <"$forge_step_log.fifo" >&2 &
		forge_tee_pid=$!
		(cd -- "$forge_exec_dir" && forge_contain_exec "$forge_step_limit" "$@") \
			</dev/null >"$forge_step_log.fifo" 2>&1 9>&- &
	else
		(cd -- "$forge_exec_dir" && forge_contain_exec "$forge_step_limit" "$@") \
			</dev/null >"$forge_step_log" 2>&1 9>&- &
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
	if [ "${forge_verbose:-0}" = 1 ]; then
		wait "$forge_tee_pid" || :
		rm -f -- "$forge_step_log.fifo"
	fi
	forge_ms_now
	forge_step_ms=$((forge_ms - forge_step_start))
	case $forge_step_exit in
	0) forge_step_reason= ;;
	124) forge_step_reason=timeout ;;
	*) forge_step_reason='exit' ;;
	esac
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

# forge_step_report NAME RUN: prints the step's progress line on stderr, and
# on failure the last 40 lines of its log.
forge_step_report() {
	[ "${forge_quiet:-0}" = 1 ] && return 0
	case $forge_step_reason in
	'') forge_step_result=ok ;;
	timeout) forge_step_result="FAIL timeout" ;;
	*) forge_step_result="FAIL exit $forge_step_exit" ;;
	esac
	printf 'Verify: %s (%s) %s %s\n' "$1" "$2" "$forge_step_result" \
		"$(forge_fmt_secs "$forge_step_ms")" >&2
	if [ -n "$forge_step_reason" ] && [ "${forge_verbose:-0}" != 1 ]; then
		tail -n 40 -- "$forge_step_log" >&2
	fi
}

# forge_verify_execute WORKDIR ISOLATED CHANGE HEAD TREE [-- COMMAND [ARG...]]:
# runs the steps (COMMAND alone when given, else forge_steps) in WORKDIR and
# records the verdict (forge_record). Sets forge_verdict to PASS or FAIL.
forge_verify_execute() {
	forge_exec_dir=$1 forge_exec_isolated=$2 forge_exec_change=$3
	forge_exec_head=$4 forge_exec_tree=$5
	shift 5
	forge_verdict=PASS
	if [ "$#" -gt 0 ]; then
		# -- COMMAND: one step named "command", run as argv, without a shell.
		shift
		forge_exec_display="$*"
		forge_step_exec "$forge_run_dir/1-command.log" "$forge_default_timeout" "$@"
		forge_exit_signal
		forge_step_report command "$forge_exec_display"
		set -- command "$forge_exec_display" "$forge_step_exit" "$forge_step_ms" "$forge_step_reason"
		[ "$forge_step_exit" = 0 ] || forge_verdict=FAIL
	else
		forge_exec_count=$(printf '%s' "$forge_steps" | jq length) ||
			forge_die 70 "jq failed while counting steps"
		forge_exec_n=0
		while [ "$forge_exec_n" -lt "$forge_exec_count" ]; do
			forge_step_get "$forge_exec_n" "$forge_default_timeout"
			forge_exec_n=$((forge_exec_n + 1))
			forge_step_exec "$forge_run_dir/$forge_exec_n-$forge_step_file.log" \
				"$forge_step_timeout" sh -c "$forge_step_run"
			forge_exit_signal
			forge_step_report "$forge_step_name" "$forge_step_run"
			set -- "$@" "$forge_step_name" "$forge_step_run" "$forge_step_exit" "$forge_step_ms" "$forge_step_reason"
			if [ "$forge_step_exit" != 0 ]; then
				forge_verdict=FAIL
				break
			fi
		done
	fi
	forge_record "$forge_verdict" "$forge_exec_isolated" "$forge_exec_change" \
		"$forge_exec_head" "$forge_exec_tree" "$@"
}

# forge_verdict_print VERDICT: prints "Verdict: VERDICT" on stdout, coloured
# on a terminal unless NO_COLOR is set.
forge_verdict_print() {
	if forge_use_color; then
		case $1 in
		PASS) printf 'Verdict: \033[32mPASS\033[0m\n' ;;
		*) printf 'Verdict: \033[31m%s\033[0m\n' "$1" ;;
		esac
	else
		printf 'Verdict: %s\n' "$1"
	fi
}

# forge_report_human RECORD: renders a verify record (JSON) for people.
forge_report_human() {
	# shellcheck disable=SC2016 # a jq program, not shell
	printf '%s' "$1" | jq -r '
		def secs: "\(. / 1000 | floor).\(. % 1000 / 100 | floor)s";
		"Run \(.run) at \(.ts): \(.verdict)",
		"  isolated: \(.isolated)  change: \(.change // "-")  head: \(.head // "-")",
		(.sandbox // empty | "  sandbox: \(.name) (\(.backend))"),
		(.steps[] | "  \(.name) (\(.run)) \(if .exit == 0 then "ok" elif .reason == "timeout" then "FAIL timeout" else "FAIL exit \(.exit)" end) \(.ms | secs)"),
		"  breaker: \(.breaker) (streak \(.streak))",
		"  logs: .forge/runs/\(.run)/"'
}
