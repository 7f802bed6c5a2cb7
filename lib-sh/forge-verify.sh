# forge-verify.sh — what to run and how: step detection (SPEC 3.1), running
# each step bounded by forge-timeout with its log kept as evidence (3.2), and
# the verdict. Part of forge.sh; source that, not this file.
# shellcheck shell=sh

# forge_makefile_has_target FILE TARGET: true when FILE defines TARGET as a
# rule target (also among several targets, or as a double-colon rule), not
# as a variable (TARGET := ...).
forge_makefile_has_target() {
	[ -f "$1" ] || return 1
	grep -Eq "^([^:#=[:space:]]+[[:space:]]+)*$2([[:space:]]+[^:#=[:space:]]+)*[[:space:]]*::?([^=]|\$)" "$1"
}

# forge_makefile_test_target FILE: sets forge_make_target to test when FILE
# has a test: target, else to check when it has check:, else to nothing.
forge_makefile_test_target() {
	forge_make_target=
	if forge_makefile_has_target "$1" test; then
		forge_make_target='test'
	elif forge_makefile_has_target "$1" check; then
		forge_make_target='check'
	fi
}

# forge_detect_list ROOT: sets forge_detect_files to the paths a copy of ROOT
# would contain (tracked, and untracked but not ignored), one a line; a name
# holding a newline has it turned into \001, so it can never pass for
# another. Outside a git repository: the regular files at ROOT itself.
forge_detect_list() {
	if forge_git -C "$1" rev-parse --git-dir >/dev/null 2>&1; then
		forge_detect_files=$(forge_git -C "$1" ls-files -z --cached --others --exclude-standard 2>/dev/null |
			tr '\n\000' '\001\n') || forge_die 70 "cannot list the files of $1"
	else
		forge_detect_files=$(cd -- "$1" && for f in * .[!.]*; do [ ! -f "$f" ] || printf '%s\n' "$f"; done)
	fi
}

# forge_detect_has ROOT PATH: true when a copy would contain PATH (a path
# relative to ROOT, listed by forge_detect_list) as a regular file.
forge_detect_has() {
	case "
$forge_detect_files
" in *"
$2
"*) [ -f "$1/$2" ] ;; *) return 1 ;; esac
}

# forge_detect_grep ROOT NAME_ERE CONTENT_ERE: true when a file a copy would
# contain whose path matches NAME_ERE holds a line matching CONTENT_ERE
# (case-insensitive: CMake's commands are).
forge_detect_grep() {
	printf '%s\n' "$forge_detect_files" | grep -E -e "$2" | {
		while IFS= read -r forge_dg_path; do
			[ -f "$1/$forge_dg_path" ] || continue
			! grep -Eiq -e "$3" -- "$1/$forge_dg_path" || exit 0
		done
		exit 1
	}
}

# forge_detect_build_dir ROOT: adds /.forge-build/ (where detected CMake and
# Meson steps build) to the exclude file of ROOT's repository, as /.forge/
# is: never committed, never copied, and not a file detection sees.
forge_detect_build_dir() {
	forge_git -C "$1" rev-parse --git-dir >/dev/null 2>&1 || return 0
	forge_exclude_add "$1" /.forge-build/ || forge_die 73 "cannot add /.forge-build/ to the exclude file of $1"
}

# forge_steps_detect ROOT: sets forge_steps to a JSON array of the steps
# detected from the files a copy of ROOT would contain (forge_detect_list),
# the first rule that runs tests winning (SPEC 3.1, the table in
# forge-verify(1)); forge_steps_tested to true, or false when only a build
# was found; forge_steps_pick to the 0-based index of a step whose make
# target is chosen only once the earlier steps generated the Makefile
# (forge_step_pick), or to nothing; forge_detect_looked to what was looked
# at. Returns 1 when nothing that runs tests was found, with forge_steps the
# first build found (or empty).
forge_steps_detect() {
	forge_steps='' forge_steps_tested=false forge_steps_pick='' forge_detect_build=''
	forge_detect_looked=''
	forge_detect_list "$1"
	# The makefile make reads, in make's own order.
	forge_mk=''
	for forge_f in GNUmakefile makefile Makefile; do
		forge_detect_has "$1" "$forge_f" || continue
		forge_mk=$forge_f
		break
	done
	forge_make_target=''
	[ -z "$forge_mk" ] || forge_makefile_test_target "$1/$forge_mk"

	# A hand-written configure is the entry point: a Makefile beside it is a
	# stub ("Please use ./configure first") or needs what it generates.
	if [ -x "$1/configure" ] && forge_detect_has "$1" configure && ! forge_detect_has "$1" configure.ac; then
		forge_steps='[{"name":"build","run":"./configure && make"},{"name":"test","run":"make test"}]'
		forge_steps_tested=true forge_steps_pick=1
		return 0
	fi
	forge_detect_looked="./configure"

	# A build system that registers tests wins over a hand makefile: its
	# tests are the ones the project's CI runs (forge-verify(1)).
	forge_detect_cmake=''
	if forge_detect_has "$1" CMakeLists.txt; then
		forge_detect_cmake='{"name":"build","run":"cmake -S . -B .forge-build && cmake --build .forge-build"}'
		if forge_detect_grep "$1" '(^|/)(CMakeLists\.txt|[^/]*\.cmake)$' \
			'^[[:space:]]*(enable_testing|add_test|include[[:space:]]*\([[:space:]]*CTest[[:space:]]*\)|(gtest|catch|doctest)_discover_tests)'; then
			forge_detect_build_dir "$1"
			forge_steps="[$forge_detect_cmake,"'{"name":"test","run":"cd .forge-build && ctest --output-on-failure --no-tests=error"}]'
			forge_steps_tested=true
			return 0
		fi
	fi
	forge_detect_looked="$forge_detect_looked, CMakeLists.txt (enable_testing, include(CTest), add_test)"
	forge_detect_meson=''
	if forge_detect_has "$1" meson.build; then
		forge_detect_meson='{"name":"build","run":"{ test -f .forge-build/build.ninja || meson setup .forge-build; } && meson compile -C .forge-build"}'
		if forge_detect_grep "$1" '(^|/)meson\.build$' '(^|[^A-Za-z0-9_.])test[[:space:]]*\('; then
			forge_detect_build_dir "$1"
			forge_steps="[$forge_detect_meson,"'{"name":"test","run":"meson test -C .forge-build --print-errorlogs"}]'
			forge_steps_tested=true
			return 0
		fi
	fi
	forge_detect_looked="$forge_detect_looked, meson.build (test())"

	if [ -n "$forge_make_target" ]; then
		forge_steps="[{\"name\":\"test\",\"run\":\"make $forge_make_target\"}]"
		forge_steps_tested=true
		return 0
	fi
	forge_detect_looked="$forge_detect_looked, GNUmakefile/makefile/Makefile (test:, check:)"

	if forge_detect_has "$1" package.json; then
		# The separate build goes when the test script, or pretest, runs it.
		# shellcheck disable=SC2016 # a jq program, not shell
		forge_npm=$(jq -r '
			if type != "object" then error("expected a JSON object") else . end
			| (.scripts // {}) as $s
			| if ($s | type) != "object" then error("scripts: expected a JSON object") else . end
			| def runs_build: type == "string"
			    and test("(^|[^A-Za-z0-9_-])((npm|pnpm)[[:space:]]+(run|run-script)|yarn([[:space:]]+run)?)[[:space:]]+build($|[^A-Za-z0-9_:-])");
			  (($s.test | type) == "string" and ($s.test | test("no test specified") | not)) as $tests
			| (($s.build | type) == "string") as $build
			| [ (if $build and ($tests | not) then "B" else empty end),
			    (if $build and $tests and ((($s.test | runs_build) or ($s.pretest | runs_build)) | not) then "b" else empty end),
			    (if $tests then "t" else empty end) ] | join("")
			' -- "$1/package.json" 2>&1) ||
			forge_die 65 "$1/package.json: cannot detect steps: $forge_npm"
		case $forge_npm in
		bt) forge_steps='[{"name":"build","run":"npm run build"},{"name":"test","run":"npm test"}]' ;;
		t) forge_steps='[{"name":"test","run":"npm test"}]' ;;
		B) forge_detect_build=${forge_detect_build:-'{"name":"build","run":"npm run build"}'} ;;
		esac
		if [ -n "$forge_steps" ]; then
			forge_steps_tested=true
			return 0
		fi
	fi
	forge_detect_looked="$forge_detect_looked, package.json (scripts.test)"
	if forge_detect_has "$1" Cargo.toml; then
		forge_steps='[{"name":"build","run":"cargo build"},{"name":"test","run":"cargo test"}]'
	elif forge_detect_has "$1" go.mod; then
		forge_steps='[{"name":"build","run":"go build ./..."},{"name":"test","run":"go test ./..."}]'
	elif forge_detect_has "$1" pyproject.toml || forge_detect_has "$1" setup.py || forge_detect_has "$1" setup.cfg ||
		forge_detect_has "$1" pytest.ini || forge_detect_has "$1" tox.ini; then
		# `pytest` runs in the environment it was installed for (a venv,
		# pyenv, pipx), which `python3` need not be.
		forge_py=pytest
		command -v pytest >/dev/null 2>&1 || forge_py='python3 -m pytest'
		# A src layout is importable from the tree only through PYTHONPATH
		# (what pytest's own pythonpath = src does); expanded when the step
		# runs, so the run text names no absolute path.
		# shellcheck disable=SC2016 # expanded by the step's shell
		if printf '%s\n' "$forge_detect_files" | grep -Eq '^src/[^/]+/__init__\.py$'; then
			forge_py='PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" '$forge_py
		fi
		forge_steps=$(jq -cn --arg r "$forge_py" '[{name: "test", run: $r}]') ||
			forge_die 70 "jq failed while writing the steps"
	elif forge_detect_has "$1" configure.ac; then
		forge_steps='[{"name":"build","run":"autoreconf -fi && ./configure && make"},{"name":"test","run":"make check"}]'
		forge_steps_pick=1
	fi
	if [ -n "$forge_steps" ]; then
		forge_steps_tested=true
		return 0
	fi
	forge_detect_looked="$forge_detect_looked, Cargo.toml, go.mod, pyproject.toml/setup.py/setup.cfg/pytest.ini/tox.ini, configure.ac"
	# Nothing runs tests: the first build found, for verify.buildOnly.
	if [ -n "$forge_detect_cmake" ]; then
		forge_detect_build_dir "$1"
		forge_steps="[$forge_detect_cmake]"
	elif [ -n "$forge_detect_meson" ]; then
		forge_detect_build_dir "$1"
		forge_steps="[$forge_detect_meson]"
	elif [ -n "$forge_detect_build" ]; then
		forge_steps="[$forge_detect_build]"
	fi
	forge_steps_tested=false
	return 1
}

# forge_steps_select ROOT: sets forge_steps from verify.steps in the merged
# configuration (forge_steps_tested null), else from detection. When
# detection finds nothing that runs tests: the build it found alone with
# verify.buildOnly true (forge_steps_tested false), else exit 64 naming what
# was looked at.
forge_steps_select() {
	forge_steps_tested=null forge_steps_pick='' forge_steps=
	# Without a configuration file there are no configured steps: no jq.
	if [ "${forge_config_files:-1}" != 0 ]; then
		forge_steps=$(forge_config_get verify.steps)
	fi
	# (An empty list was refused when the configuration was read.)
	[ -z "$forge_steps" ] || return 0
	forge_steps_detect "$1" && return 0
	if [ -n "$forge_steps" ] && [ "$(forge_config_get verify.buildOnly)" = true ]; then
		forge_steps_tested=false
		return 0
	fi
	if [ -n "$forge_steps" ]; then
		forge_die 64 "no tests found: only a build ($(printf '%s' "$forge_steps" | jq -r '.[0].run')); looked at $forge_detect_looked. Set verify.buildOnly: true to accept a build alone, add verify.steps to forge.json or pass -- COMMAND"
	fi
	forge_die 64 "no tests found: looked at $forge_detect_looked. Add verify.steps to forge.json or pass -- COMMAND"
}

# forge_step_pick INDEX DIR: for the detected step INDEX (0-based) whose
# make target depends on a Makefile an earlier step generated
# (forge_steps_pick), sets forge_step_run to `make test` or `make check`
# from the makefile now in DIR. When it has neither: returns 1 (skip the
# step) with verify.buildOnly true, setting forge_steps_tested false; else
# exits 64.
forge_step_pick() {
	[ -n "${forge_steps_pick:-}" ] && [ "$1" = "$forge_steps_pick" ] || return 0
	forge_make_target=''
	for forge_f in GNUmakefile makefile Makefile; do
		[ -f "$2/$forge_f" ] || continue
		forge_makefile_test_target "$2/$forge_f"
		break
	done
	if [ -n "$forge_make_target" ]; then
		forge_step_run="make $forge_make_target"
		return 0
	fi
	if [ "$(forge_config_get verify.buildOnly)" = true ]; then
		forge_steps_tested=false
		return 1
	fi
	forge_die 64 "no tests found: the makefile the build generated has no test: or check: target. Set verify.buildOnly: true to accept a build alone, add verify.steps to forge.json or pass -- COMMAND"
}

# forge_steps_plan DEFAULT_TIMEOUT: reads every step of forge_steps in one
# jq run into forge_plan, which forge_step_next hands out step by step.
# Exits 65 naming the key when a step is malformed (before any step runs).
forge_steps_plan() {
	# Per step: "TIMEOUT<TAB>FILE<TAB>LINES<TAB>NAME", then its run text in
	# LINES lines (it may hold newlines and tabs; never a NUL).
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_plan=$(printf '%s' "$forge_steps" | jq -r --argjson t "$1" '
		[ to_entries[] | .key as $i | .value as $s | "verify.steps[\($i)]" as $k
		  | if ($s.run | type) != "string" or $s.run == "" then {e: "\($k).run: a non-empty shell command is required"}
		    elif $s.timeout != null and (($s.timeout | type) != "number" or $s.timeout <= 0) then {e: "\($k).timeout: expected a positive number of seconds"}
		    else ($s.name // "step\($i + 1)" | tostring) as $n
		      | {p: "\($s.timeout // $t)\t\($n | gsub("[^A-Za-z0-9._-]"; "_"))\t\($s.run | split("\n") | length)\t\($n | gsub("[\u0000-\u001f\u007f-\u009f]"; " "))\n\($s.run)"}
		    end ] as $steps
		| ([$steps[] | .e // empty] | first) as $bad
		| if $bad then "E\t\($bad)" else $steps[].p end') || forge_die 70 "jq failed while reading verify.steps"
	case $forge_plan in
	"E	"*) forge_die 65 "configuration: key ${forge_plan#??}" ;;
	esac
}

# forge_step_next: takes the next step of forge_plan (forge_steps_plan) into
# forge_step_timeout, forge_step_file (a file-name-safe form of the name),
# forge_step_name and forge_step_run; returns 1 when none is left.
forge_step_next() {
	[ -n "$forge_plan" ] || return 1
	forge_step_line=${forge_plan%%"
"*}
	forge_plan=${forge_plan#*"
"}
	forge_step_timeout=${forge_step_line%%"	"*}
	forge_step_line=${forge_step_line#*"	"}
	forge_step_file=${forge_step_line%%"	"*}
	forge_step_line=${forge_step_line#*"	"}
	forge_step_lines=${forge_step_line%%"	"*}
	forge_step_name=${forge_step_line#*"	"}
	forge_step_run='' forge_step_sep=''
	while [ "$forge_step_lines" -gt 0 ]; do
		forge_step_run=$forge_step_run$forge_step_sep${forge_plan%%"
"*}
		forge_step_sep='
'
		case $forge_plan in
		*"
"*) forge_plan=${forge_plan#*"
"} ;;
		*) forge_plan= ;;
		esac
		forge_step_lines=$((forge_step_lines - 1))
	done
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
		    | "\($s.timeout // $t)\t\($n | gsub("[^A-Za-z0-9._-]"; "_"))\t\($n | gsub("[\u0000-\u001f\u007f-\u009f]"; " "))\n\($s.run)"
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

# forge_secs_to_ms SECS: sets forge_limit_ms to a decimal number of seconds
# in milliseconds (rounded down), or to nothing when SECS is not plain digits
# with an optional fraction.
forge_secs_to_ms() {
	forge_limit_ms=
	case $1 in '' | . | *[!0-9.]* | *.*.*) return 0 ;; esac
	forge_limit_int=${1%%.*} forge_limit_frac=
	case $1 in *.*) forge_limit_frac=${1#*.} ;; esac
	forge_limit_frac=${forge_limit_frac}000
	forge_limit_frac=${forge_limit_frac%"${forge_limit_frac#???}"}
	# Leading zeros would make $(( )) read octal.
	while :; do
		case $forge_limit_int in 0?*) forge_limit_int=${forge_limit_int#0} ;; *) break ;; esac
	done
	while :; do
		case $forge_limit_frac in 0?*) forge_limit_frac=${forge_limit_frac#0} ;; *) break ;; esac
	done
	forge_limit_ms=$((${forge_limit_int:-0} * 1000 + forge_limit_frac))
}

# forge_status_start LABEL: on a terminal (stderr), and neither quiet nor
# verbose, shows "LABEL 12s" on one line, updated once a second, until
# forge_status_stop. Off a terminal it does nothing.
forge_status_start() {
	forge_status_pid=
	[ "${forge_quiet:-0}" != 1 ] && [ "${forge_verbose:-0}" != 1 ] && [ -t 2 ] || return 0
	# A long command line must not wrap: the line could not be erased.
	forge_status_label=$(printf '%s' "$1" | tr '\000-\037' ' ' | cut -c 1-70)
	(
		forge_status_sleep=
		trap 'kill "$forge_status_sleep" 2>/dev/null; exit 0' TERM
		forge_status_s=0
		while :; do
			printf '\r\033[K%s %ss' "$forge_status_label" "$forge_status_s" >&2
			sleep 1 &
			forge_status_sleep=$!
			wait "$forge_status_sleep"
			forge_status_s=$((forge_status_s + 1))
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

# forge_step_exec LOG TIMEOUT COMMAND [ARG...]: runs one step in
# forge_exec_dir, bounded by forge-timeout (TERM to its process group, KILL
# 5 s later; whatever the step leaves in its group when it exits goes the
# same way), its output in LOG (and on stderr as well with forge_verbose=1).
# On a terminal the status line shows forge_step_status (the step's
# "Verify: NAME (RUN)"; LOG's name when unset). The warm slot's lock
# (fd 9) is closed for the step, so nothing it leaves running can hold the
# slot.
# Sets forge_step_exit, forge_step_ms and forge_step_reason: empty on
# success, else "exit", "timeout", "not executable" (126), "not found" (127)
# or "interrupted" (a signal reached forge-verify). The step runs in the
# background so that a signal trap (see forge_interrupt) can forward the
# signal while the shell waits.
forge_step_exec() {
	forge_step_log=$1 forge_step_limit=$2
	shift 2
	forge_step_header "$forge_step_log"
	forge_ms_now
	forge_step_start=$forge_mono_ms
	if [ "${forge_verbose:-0}" = 1 ]; then
		forge_step_fifo=$forge_step_log.fifo forge_step_show=$forge_step_log.show
		rm -f -- "$forge_step_fifo" "$forge_step_show"
		mkfifo -m 600 -- "$forge_step_fifo" "$forge_step_show" ||
			forge_die 73 "cannot create $forge_step_fifo"
		# tee keeps the raw bytes in the log and passes them on to be shown
		# (forge_printable_lines: the terminal never obeys them). The FIFO
		# goes away when tee is done: that is how forge_tee_finish tells a
		# finished tee from one kept waiting by an escaped process. Without
		# tee, the one writer, the filter sees the end of its input.
		(
			forge_printable_lines '| ' <"$forge_step_show" >&2 &
			forge_tee_show=$!
			tee -a -- "$forge_step_log" <"$forge_step_fifo" >"$forge_step_show" &
			forge_tee=$!
			trap 'kill "$forge_tee" 2>/dev/null' TERM
			wait "$forge_tee" || wait "$forge_tee" || :
			wait "$forge_tee_show" || :
			rm -f -- "$forge_step_fifo" "$forge_step_show"
		) 9>&- &
		forge_tee_pid=$!
		(cd -- "$forge_exec_dir" && forge_contain_exec "$forge_step_limit" "$@") \
			</dev/null >"$forge_step_fifo" 2>&1 9>&- &
	else
		forge_status_start "${forge_step_status:-${forge_step_log##*/}}"
		(cd -- "$forge_exec_dir" && forge_contain_exec "$forge_step_limit" "$@") \
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
	forge_step_ms=$((forge_mono_ms - forge_step_start))
	if [ "${forge_verbose:-0}" = 1 ]; then
		forge_tee_finish
	else
		forge_status_stop
	fi
	forge_secs_to_ms "$forge_step_limit"
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

# forge_step_header LOG: in a copy (--isolated), starts LOG with the one line
# that names the copy's folder, so that a path of the copy in the output (a
# stack trace) can be read back as a path of the repository; the step's
# output is appended after it.
forge_step_header() {
	[ -n "${forge_copy_dir:-}" ] && [ "$forge_exec_dir" = "$forge_copy_dir" ] || return 0
	printf 'forge-verify: the step runs in a copy of the repository: %s\n' "$forge_copy_dir" >>"$1" ||
		forge_die 73 "cannot write $1"
}

# forge_tee_finish: waits for the -v stream of the step that just ended. Its
# process group is gone by now (forge-timeout saw to it), so what still
# holds the output open escaped it (setsid): tee gets a second at most, so
# the step's timeout holds whatever such a process does.
forge_tee_finish() {
	forge_tee_n=0
	while [ -p "$forge_step_fifo" ] && [ "$forge_tee_n" -lt 10 ]; do
		sleep 0.1
		forge_tee_n=$((forge_tee_n + 1))
	done
	[ ! -p "$forge_step_fifo" ] || kill "$forge_tee_pid" 2>/dev/null || :
	wait "$forge_tee_pid" || :
	rm -f -- "$forge_step_fifo" "$forge_step_show"
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
	[ -z "${forge_signal:-}" ] || return 0
	case $1 in
	129) set -- HUP 1 ;;
	130) set -- INT 2 ;;
	143) set -- TERM 16384 ;;
	*) return 0 ;;
	esac
	forge_sigign=
	while IFS=' 	' read -r forge_sig_key forge_sig_value; do
		[ "$forge_sig_key" != SigIgn: ] || forge_sigign=$forge_sig_value
	done 2>/dev/null </proc/$$/status || :
	case $forge_sigign in '' | *[!0-9a-fA-F]*) return 0 ;; esac
	# The low 32 bits hold HUP, INT and TERM (the mask is 16 hex digits).
	case $forge_sigign in ????????????????) forge_sigign=${forge_sigign#????????} ;; esac
	[ $((0x$forge_sigign & $2)) -eq 0 ] || forge_signal=$1
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

# forge_step_label NAME RUN: prints the start of a step's progress line, on
# one line and shown, not obeyed (forge_printable: NAME and RUN come from a
# configuration or a command line that may hold escape sequences).
forge_step_label() {
	forge_label="Verify: $1 ($2)"
	# Plain text needs no jq (most labels); anything else goes through it.
	case $forge_label in
	*[![:alnum:][:punct:]\ ]*) printf '%s' "$forge_label" | forge_printable ;;
	*) printf '%s\n' "$forge_label" ;;
	esac
}

# forge_shell_quote ARG...: sets forge_quoted to ARG... as one line of POSIX
# shell that gives them back, exactly, when pasted: each word left bare when
# it holds only characters no shell treats specially, else in single quotes
# (a ' inside as '\''). "sh -c './configure && make test'" stays just that.
forge_shell_quote() {
	forge_quoted='' forge_quote_sep=''
	for forge_quote_arg in "$@"; do
		case $forge_quote_arg in
		'' | *[!A-Za-z0-9_@%+=:,./-]*)
			forge_quote_rest=$forge_quote_arg forge_quote_word=
			while :; do
				case $forge_quote_rest in
				*\'*)
					forge_quote_word="$forge_quote_word${forge_quote_rest%%\'*}'\\''"
					forge_quote_rest=${forge_quote_rest#*\'} ;;
				*)
					forge_quote_word=$forge_quote_word$forge_quote_rest
					break ;;
				esac
			done
			forge_quote_word="'$forge_quote_word'" ;;
		*) forge_quote_word=$forge_quote_arg ;;
		esac
		forge_quoted=$forge_quoted$forge_quote_sep$forge_quote_word
		forge_quote_sep=' '
	done
}

# forge_step_report NAME RUN LOG: prints the step's progress line on stderr;
# when it failed, the last 40 lines of its output (unless they were streamed
# with -v) and the path of LOG, relative to the repository root. With -v the
# step's line also went out before its output. Output lines are shown after
# "| " (forge_printable_lines), so none can pass for a line of forge's own.
forge_step_report() {
	# The files the failure names are evidence whatever is printed.
	case $forge_step_reason in '' | interrupted) ;; *) forge_evidence_keep ;; esac
	[ "${forge_quiet:-0}" = 1 ] && return 0
	case $forge_step_reason in
	'') forge_step_result=ok ;;
	timeout) forge_step_result="FAIL timeout" ;;
	exit) forge_step_result="FAIL exit $forge_step_exit" ;;
	*) forge_step_result="ERROR $forge_step_reason" ;;
	esac
	printf '%s %s %s\n' "$(forge_step_label "$1" "$2")" "$forge_step_result" \
		"$(forge_fmt_secs "$forge_step_ms")" >&2
	case $forge_step_reason in '' | interrupted) return 0 ;; esac
	[ "${forge_verbose:-0}" = 1 ] || forge_step_tail | forge_printable_lines '| ' >&2
	[ -z "$forge_evidence_shown" ] || printf '%s' "$forge_evidence_shown" >&2
	printf 'log: %s\n' "$3" >&2
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

# forge_evidence_def: sets forge_evidence_jq to a jq program: from the lines of a step's output, every path that may
# name a file of the copy, one a line, relative to its root: what follows
# the copy's folder ($copy, $real: its physical path) up to a delimiter, and
# each run of text between delimiters (spaces only inside it, six at most,
# so names with spaces count) that holds a "/" or a "." and does not start
# with "/".
# A trailing "." (the end of a sentence) and a leading "./" go.
forge_evidence_def() {
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_evidence_jq='
	def cuts: . as $s | [range(0; length) as $i | select(" \t\"'"'"'`()[]{}<>,;:=|" | index($s[$i:$i + 1]) != null) | $i];
	def spans: . as $s | cuts as $c | ($c | length) as $n
		| range(-1; $n) as $k | range($k + 1; [$k + 7, $n] | min + 1) as $m
		| (if $k < 0 then 0 else $c[$k] + 1 end) as $from
		| (if $m == $n then ($s | length) else $c[$m] end) as $to
		| select($to > $from and $to - $from <= 1024) | $s[$from:$to];
	def firsts: . as $s | cuts as $c | ($c[:7] + [$s | length])[] | $s[:.];
	def tidy: ltrimstr("./") | (., rtrimstr("."));
	[ split("\n")[] as $l
	  | ( ([$copy, $real] | unique[] | . + "/") as $p
	      | $l | split($p)[1:][] | firsts | tidy ),
	    ( $l | spans | select(test("^/|[\t\"'"'"'`()\\[\\]{}<>,;:=|]") | not) | select(test("[/.]")) | tidy ) ]
	| unique[] | select(length > 0 and (test("[\u0000-\u001f\u007f]") | not))'
}

# forge_evidence_keep: keeps in the run's evidence folder, as
# .forge/runs/<id>/files/<path>, each file of the folder the step ran in
# (the copy, or the repository in a plain run, where a later run may
# overwrite it) that the last 40 lines of the step's output name (SPEC 3.2):
# only regular files, never through a symbolic link (in that folder or in
# .forge), nothing of .git or .forge, 10 MB in all; nothing in a --sandbox
# run (the files are the sandbox's, and it may still be running). Sets
# forge_evidence_shown to the lines that say what was kept (empty with -q).
forge_evidence_keep() {
	forge_evidence_shown=
	# Never what a sandboxed step wrote: a process it left running can swap a
	# folder for a link between forge's check and its copy, and the host
	# would copy a file of its own into .forge, where the sandbox reads it.
	[ -z "${forge_contain_name:-}" ] || return 0
	forge_evidence_def
	forge_ev_dir=$forge_exec_dir
	forge_ev_real=$(cd -P -- "$forge_ev_dir" 2>/dev/null && pwd -P) || return 0
	forge_ev_left=10485760 forge_ev_seen='
'
	forge_list=$(forge_step_tail | jq -R -r -s --arg copy "$forge_ev_dir" --arg real "$forge_ev_real" \
		"$forge_evidence_jq" 2>/dev/null) || return 0
	while forge_list_next; do
		forge_ev_path=$forge_item
		case $forge_ev_seen in *"
$forge_ev_path
"*) continue ;; esac
		forge_ev_seen=$forge_ev_seen$forge_ev_path'
'
		case /$forge_ev_path/ in
		*//* | */./* | */../* | /.git/* | /.forge/*) continue ;;
		esac
		forge_evidence_file "$forge_ev_path" || continue
		[ "${forge_quiet:-0}" = 1 ] && continue
		if [ "$forge_ev_dir" != "${forge_copy_dir:-}" ]; then
			forge_ev_line=$(printf 'kept: %s as .forge/runs/%s/files/%s' "$forge_ev_path" "$forge_run_id" "$forge_ev_path" | forge_printable)
		else
			forge_ev_line=$(printf 'kept: %s (in the copy: %s/%s) as .forge/runs/%s/files/%s' "$forge_ev_path" \
				"$forge_ev_dir" "$forge_ev_path" "$forge_run_id" "$forge_ev_path" | forge_printable)
		fi
		forge_evidence_shown="$forge_evidence_shown$forge_ev_line
"
	done
}

# forge_evidence_file PATH: copies forge_ev_dir/PATH to the run's evidence
# folder when it is a regular file reached through real folders only and
# fits in forge_ev_left (which it then lessens). Returns 1 otherwise.
forge_evidence_file() {
	forge_ev_parent=${1%/*} forge_ev_base=${1##*/}
	[ "$forge_ev_parent" != "$1" ] || forge_ev_parent=
	forge_ev_dest=$forge_run_dir/files/$1
	# Most candidates name nothing: told apart without a process.
	[ -f "$forge_ev_real/$1" ] || return 1
	forge_state_path "$forge_ev_dest" file || return 1
	# The file, checked from inside its folder once the shell stands in it
	# (its physical path checked: no folder on the way was a link), and its
	# size by find (which opens nothing).
	(
		cd -P -- "$forge_ev_real${forge_ev_parent:+/$forge_ev_parent}" 2>/dev/null || exit 1
		[ "$(pwd -P)" = "$forge_ev_real${forge_ev_parent:+/$forge_ev_parent}" ] || exit 1
		[ -f "./$forge_ev_base" ] && [ ! -L "./$forge_ev_base" ] || exit 1
		[ -n "$(find "./$forge_ev_base" -prune -type f -size -"$((forge_ev_left + 1))"c)" ]
	) || return 1
	# The folders on the way, made one by one, each checked.
	forge_ev_at=$forge_run_dir/files forge_ev_rest=$forge_ev_parent
	while :; do
		forge_state_path "$forge_ev_at" dir || return 1
		[ -d "$forge_ev_at" ] || mkdir -m 700 -- "$forge_ev_at" 2>/dev/null || return 1
		[ -n "$forge_ev_rest" ] || break
		forge_ev_at=$forge_ev_at/${forge_ev_rest%%/*}
		case $forge_ev_rest in */*) forge_ev_rest=${forge_ev_rest#*/} ;; *) forge_ev_rest= ;; esac
	done
	[ ! -e "$forge_ev_dest" ] && [ ! -L "$forge_ev_dest" ] || return 1
	# cp -P copies a link as a link (checked below, then removed); bounded,
	# since a FIFO put in the file's place meanwhile would block it.
	forge_helper_path forge-timeout
	(
		cd -P -- "$forge_ev_real${forge_ev_parent:+/$forge_ev_parent}" 2>/dev/null || exit 1
		umask 077
		exec "$forge_helper" -k 1 10 cp -P -- "./$forge_ev_base" "$forge_ev_dest"
	) </dev/null >/dev/null 2>&1 || { rm -f -- "$forge_ev_dest"; return 1; }
	if [ -L "$forge_ev_dest" ] || [ ! -f "$forge_ev_dest" ]; then
		rm -f -- "$forge_ev_dest"
		return 1
	fi
	forge_ev_size=$(wc -c <"$forge_ev_dest") || forge_ev_size=$forge_ev_left
	forge_ev_size=${forge_ev_size##*[!0-9]}
	if [ "$forge_ev_size" -gt "$forge_ev_left" ]; then
		rm -f -- "$forge_ev_dest"
		return 1
	fi
	chmod 600 -- "$forge_ev_dest" 2>/dev/null || :
	forge_ev_left=$((forge_ev_left - forge_ev_size))
}

# forge_verify_step N FILE NAME RUN TIMEOUT COMMAND [ARG...]: runs step N
# (1-based) with its log N-FILE.log in the run folder (FILE: the name reduced
# to [A-Za-z0-9._-], never a path) and reports it. Sets what forge_step_exec
# sets.
forge_verify_step() {
	forge_vs_n=$1 forge_vs_file=$2 forge_vs_name=$3 forge_vs_run=$4 forge_vs_timeout=$5
	forge_vs_log=$forge_vs_n-$forge_vs_file.log
	shift 5
	if [ "${forge_verbose:-0}" = 1 ] && [ "${forge_quiet:-0}" != 1 ]; then
		printf '%s\n' "$(forge_step_label "$forge_vs_name" "$forge_vs_run")" >&2
	fi
	forge_step_status=$(forge_step_label "$forge_vs_name" "$forge_vs_run")
	forge_run_log "$forge_vs_n" "$forge_vs_file"
	forge_step_exec "$forge_run_log" "$forge_vs_timeout" "$@"
	forge_step_classify "$forge_vs_run" "${forge_exec_isolated:-false}"
	forge_step_status=
	forge_step_report "$forge_vs_name" "$forge_vs_run" ".forge/runs/$forge_run_id/$forge_vs_log"
}

# forge_verify_execute WORKDIR ISOLATED CHANGE HEAD TREE [-- COMMAND [ARG...]]:
# runs the steps (COMMAND alone when given, else forge_steps) in WORKDIR and
# records the verdict (forge_record), then sets forge_recorded=1. Sets
# forge_verdict to PASS, FAIL, or ERROR when a step could not be executed or
# found (126/127: a broken environment, not a failure of the code; the step
# is named on stderr). A signal ends the run as ERROR with the interrupted
# step on the record, then exits 128+n.
forge_verify_execute() {
	forge_exec_dir=$1 forge_exec_isolated=$2 forge_exec_change=$3
	forge_exec_head=$4 forge_exec_tree=$5
	shift 5
	forge_verdict=PASS
	if [ "$#" -gt 0 ]; then
		# -- COMMAND: one step named "command", run as argv, without a
		# shell; recorded with its exact argv, and shown (and recorded as
		# "run") shell-quoted, so that pasting it runs the same thing.
		shift
		forge_shell_quote "$@"
		forge_exec_display=$forge_quoted
		forge_verify_step 1 command command "$forge_exec_display" "$forge_default_timeout" "$@"
		forge_record_argc=$#
		forge_record_tested=null
		set -- command "$forge_exec_display" "$forge_step_exit" "$forge_step_ms" "$forge_step_reason" "$@"
		forge_verify_judge
	else
		forge_record_argc=0
		forge_record_tested=${forge_steps_tested:-null}
		forge_steps_plan "$forge_default_timeout"
		forge_exec_n=0
		while forge_step_next; do
			forge_exec_n=$((forge_exec_n + 1))
			forge_step_pick "$((forge_exec_n - 1))" "$forge_exec_dir" || continue
			forge_verify_step "$forge_exec_n" "$forge_step_file" "$forge_step_name" "$forge_step_run" \
				"$forge_step_timeout" sh -c -- "$forge_step_run"
			set -- "$@" "$forge_step_name" "$forge_step_run" "$forge_step_exit" "$forge_step_ms" "$forge_step_reason"
			forge_verify_judge
			[ "$forge_verdict" = PASS ] || break
		done
		# A build alone (verify.buildOnly) is known once its make target was looked for.
		forge_record_tested=${forge_steps_tested:-null}
	fi
	forge_record "$forge_verdict" "$forge_exec_isolated" "$forge_exec_change" \
		"$forge_exec_head" "$forge_exec_tree" "$@"
	forge_record_argc=0
	forge_recorded=1
	forge_exit_signal
}

# forge_step_missing: sets forge_step_missing to the first command the log
# of the step that just ran (forge_step_log) says was not found: by the
# shells (dash, bash, busybox), make running a recipe line itself, env, or
# forge-timeout; to nothing when none is named.
forge_step_missing() {
	forge_step_missing=$(sed -n -E \
		-e 's/^.*: [0-9]+: (.+): not found$/\1/;t found' \
		-e 's/^.*: line [0-9]+: (.+): command not found$/\1/;t found' \
		-e 's/^[^: ]+: (.+): command not found$/\1/;t found' \
		-e 's/^g?make(\[[0-9]+\])?: (.+): (No such file or directory|Command not found)$/\2/;t found' \
		-e "s/^env: '(.+)': No such file or directory\$/\\1/;t found" \
		-e 's/^forge-timeout: error: cannot run (.+): No such file or directory$/\1/;t found' \
		-e 's/^(ba|da)?sh: (.+): not found$/\2/;t found' \
		-e d -e ':found' -e 'p;q' -- "$forge_step_log" 2>/dev/null | cut -c 1-100)
}

# forge_step_own_module DIR: sets forge_step_module to the project's own
# Python package that the log of the step that just ran says cannot be
# imported (a package or module at DIR or under DIR/src), or to nothing. Only
# the top-level name counts: a missing submodule of an importable package
# (No module named 'pkg.sub') is the code's failure.
forge_step_own_module() {
	forge_step_module=''
	for forge_m in $(sed -n -E \
		-e "s/^.*ModuleNotFoundError: No module named '([A-Za-z_][A-Za-z0-9_]*)'\$/\\1/p" \
		-e 's/^.*ImportError: No module named ([A-Za-z_][A-Za-z0-9_]*)$/\1/p' \
		-- "$forge_step_log" 2>/dev/null | head -n 20); do
		for forge_d in "$1/src" "$1"; do
			if [ -f "$forge_d/$forge_m/__init__.py" ] || [ -f "$forge_d/$forge_m.py" ]; then
				forge_step_module=$forge_m forge_step_module_dir=${forge_d#"$1"}
				return 0
			fi
		done
	done
}

# forge_step_npm_missing RUN ISOLATED: true, with forge_step_reason "not
# installed" and its hint, when the failed step RUN is npm's in a plain run
# (ISOLATED false) of a project that declares dependencies but has no
# node_modules: whatever it then missed (a module, a tool of a dependency)
# was never installed.
forge_step_npm_missing() {
	case $1 in npm | 'npm '*) ;; *) return 1 ;; esac
	[ "$2" = false ] && [ ! -d "$forge_exec_dir/node_modules" ] && [ -f "$forge_exec_dir/package.json" ] &&
		jq -e '(.dependencies // {}) + (.devDependencies // {}) | length > 0' \
			-- "$forge_exec_dir/package.json" >/dev/null 2>&1 || return 1
	forge_step_reason='not installed'
	forge_step_hint="the project's npm dependencies are not installed (no node_modules): run npm ci (or npm install), or verify with --isolated, which runs that setup in the copy"
}

# forge_step_classify RUN ISOLATED: tells a broken environment from failing
# code once a step has ended (SPEC 3.1), from its exit status, RUN (its
# command as shown) and its log: a command not found anywhere in it (also
# under make, whose Error 127 becomes its own exit 2), pytest's exit codes
# 2-5, an import error of the project's own package, and (ISOLATED false) an
# npm project whose dependencies are not installed are ERRORs, the streak
# untouched. Refines forge_step_reason ("not found", "no tests", "test
# runner", "not importable", "not installed") and sets forge_step_hint, the
# one-line hint for the error message.
forge_step_classify() {
	forge_step_hint=''
	case $forge_step_reason in exit | 'not found') forge_step_npm_missing "$1" "$2" && return 0 ;; esac
	case $forge_step_reason in
	'not found')
		forge_step_missing
		if [ -n "$forge_step_missing" ]; then
			forge_step_hint="'$forge_step_missing' is not installed or not on PATH"
		else
			forge_step_hint="its command or a tool it runs is missing"
		fi
		return 0 ;;
	'not executable')
		forge_step_hint="its command or a tool it runs cannot be executed"
		return 0 ;;
	exit) ;;
	*) return 0 ;;
	esac
	if grep -Eq '^g?make(\[[0-9]+\])?: \*\*\* .*Error 127$' -- "$forge_step_log" 2>/dev/null; then
		forge_step_reason='not found'
		forge_step_missing
		forge_step_hint="make ran a command that was not found"
		[ -z "$forge_step_missing" ] ||
			forge_step_hint="$forge_step_hint: '$forge_step_missing' is not installed or not on PATH"
		return 0
	fi
	forge_step_own_module "$forge_exec_dir"
	if [ -n "$forge_step_module" ]; then
		forge_step_reason='not importable'
		if [ "$forge_step_module_dir" = /src ]; then
			forge_step_hint="the project's own package '$forge_step_module' (src/) cannot be imported: detected pytest steps put src on PYTHONPATH; a package that must be built or installed first needs a setup step (verify.isolated.setup: pip install -e .) and --isolated, see forge-verify(1)"
		else
			forge_step_hint="the project's own package '$forge_step_module' cannot be imported from the root: install it (pip install -e .) or set PYTHONPATH in verify.steps, see forge-verify(1)"
		fi
		return 0
	fi
	if printf '%s\n' "$1" | grep -Eq '^([A-Za-z_][A-Za-z0-9_]*=[^ ]* )*(pytest|py\.test|python[0-9.]* -m pytest)( |$)'; then
		case $forge_step_exit in
		2) forge_step_reason='test runner'
			forge_step_hint="pytest was interrupted before the tests ran (exit 2), e.g. by errors while collecting them: see the log" ;;
		3) forge_step_reason='test runner'
			forge_step_hint="pytest had an internal error (exit 3)" ;;
		4) forge_step_reason='test runner'
			forge_step_hint="pytest refused its command line or configuration (exit 4: a usage error, e.g. minversion or an unknown option)" ;;
		5) forge_step_reason='no tests'
			forge_step_hint="pytest collected no tests (exit 5)" ;;
		esac
		return 0
	fi
	case $1 in
	*ctest*)
		if grep -q '^No tests were found!!!$' -- "$forge_step_log" 2>/dev/null; then
			forge_step_reason='no tests'
			forge_step_hint="ctest found no registered tests: the project registers them only with options its defaults leave off; set verify.steps"
		fi ;;
	esac
}

# forge_verify_judge: sets forge_verdict from the step that just ran (its
# reason as forge_step_classify left it): a failure of the code is a FAIL,
# a broken environment an ERROR with its hint on stderr.
forge_verify_judge() {
	case $forge_step_reason in
	'') ;;
	interrupted) forge_verdict=ERROR ;;
	exit | timeout) forge_verdict=FAIL ;;
	*)
		forge_verdict=ERROR
		forge_error "$(printf "step '%s' (%s): %s (exit %s): %s" "$forge_vs_name" "$forge_vs_run" \
			"$forge_step_reason" "$forge_step_exit" "${forge_step_hint:-a broken environment, not a failure of the code}" |
			forge_printable)" ;;
	esac
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
	forge_printable_def
	# shellcheck disable=SC2016 # a jq program, not shell
	printf '%s' "$1" | jq -r "$forge_printable_jq"'
		def secs: "\(. / 1000 | floor).\(. % 1000 / 100 | floor)s";
		"Run \(.run) at \(.ts): \(.verdict)",
		(.reused // empty | "  reused: the verdict of run \(.run) on \(.host)"),
		"  isolated: \(.isolated)  change: \(.change // "-")  head: \(.head // "-")",
		(.sandbox // empty | "  sandbox: \(.name) (\(.backend))"),
		(.steps[] | "  \(.name) (\(.run)) \(if .exit == 0 then "ok" elif .reason == "timeout" then "FAIL timeout" elif .reason == "exit" or .reason == null then "FAIL exit \(.exit)" else "ERROR \(.reason)" end) \(.ms | secs)"),
		"  breaker: \(.breaker) (streak \(.streak))",
		"  logs: .forge/runs/\(.run)/"
		| printable'
}
