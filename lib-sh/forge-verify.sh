# forge-verify.sh — a verification: its steps run through the step runner
# (forge-steps.sh), a broken environment told from failing code, the verdict
# recorded (forge-state.sh) and shown.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_verify_execute WORKDIR ISOLATED CHANGE HEAD TREE SANDBOX KEY
# [-- COMMAND [ARG...]]: runs the steps (COMMAND alone when given, else
# forge_steps) in WORKDIR and records the verdict (forge_record, with the
# record's SANDBOX and KEY), then sets forge_recorded=1. Sets
# forge_record_tested first (what the record's "tested" is). Sets
# forge_verdict to PASS, FAIL, or ERROR when a step could not be executed or
# found (126/127: a broken environment, not a failure of the code; the step
# is named on stderr). A signal ends the run as ERROR with the interrupted
# step on the record, then exits 128+n.
forge_verify_execute() {
	local change_id="$3" head="$4" tree="$5" sandbox="$6" key="$7" argc display n
	forge_exec_dir=$1 forge_exec_isolated=$2
	shift 7
	forge_verdict=PASS
	if [ "$#" -gt 0 ]; then
		# -- COMMAND: one step named "command", run as argv, without a
		# shell; recorded with its exact argv, and shown (and recorded as
		# "run") shell-quoted, so that pasting it runs the same thing.
		shift
		forge_shell_quote "$@"
		display=$forge_quoted
		forge_step Verify 1 command command "$display" "$forge_default_timeout" "$@"
		argc=$#
		forge_record_tested=null
		set -- command "$display" "$forge_step_exit" "$forge_step_ms" "$forge_step_reason" "$@"
		forge_verify_judge command "$display"
	else
		argc=0
		forge_record_tested=${forge_steps_tested:-null}
		forge_steps_queue "$forge_steps" "$forge_default_timeout" verify.steps
		n=0
		while forge_step_next; do
			n=$((n + 1))
			forge_step_pick "$((n - 1))" "$forge_exec_dir" || continue
			forge_step Verify "$n" "$forge_step_file" "$forge_step_name" "$forge_step_run" \
				"$forge_step_timeout" sh -c -- "$forge_step_run"
			set -- "$@" "$forge_step_name" "$forge_step_run" "$forge_step_exit" "$forge_step_ms" "$forge_step_reason"
			forge_verify_judge "$forge_step_name" "$forge_step_run"
			[ "$forge_verdict" = PASS ] || break
		done
		# A build alone (verify.buildOnly) is known once its make target was looked for.
		forge_record_tested=${forge_steps_tested:-null}
	fi
	forge_record "$forge_verdict" "$forge_exec_isolated" "$change_id" \
		"$head" "$tree" "$sandbox" "$forge_record_tested" "$key" "$argc" "$@"
	forge_recorded=1
	forge_exit_signal
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
	local dir module
	forge_step_module=''
	for module in $(sed -n -E \
		-e "s/^.*ModuleNotFoundError: No module named '([A-Za-z_][A-Za-z0-9_]*)'\$/\\1/p" \
		-e 's/^.*ImportError: No module named ([A-Za-z_][A-Za-z0-9_]*)$/\1/p' \
		-- "$forge_step_log" 2>/dev/null | head -n 20); do
		for dir in "$1/src" "$1"; do
			if [ -f "$dir/$module/__init__.py" ] || [ -f "$dir/$module.py" ]; then
				forge_step_module=$module forge_step_module_dir=${dir#"$1"}
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

# forge_verify_judge NAME RUN: sets forge_verdict from the step NAME (its
# command as shown: RUN) that just ran (its
# reason as forge_step_classify left it): a failure of the code is a FAIL,
# a broken environment an ERROR with its hint on stderr.
forge_verify_judge() {
	case $forge_step_reason in
	'') ;;
	interrupted) forge_verdict=ERROR ;;
	exit | timeout) forge_verdict=FAIL ;;
	*)
		forge_verdict=ERROR
		forge_error "$(printf "step '%s' (%s): %s (exit %s): %s" "$1" "$2" \
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
	printf '%s' "$1" | jq -r "$forge_printable_jq"'
		def secs: "\(. / 1000 | floor).\(. % 1000 / 100 | floor)s";
		"Run \(.run) at \(.ts): \(.verdict)",
		(.reused // empty | "  reused: the verdict of run \(.run) on \(.host)"),
		"  isolated: \(.isolated)  change: \(.change // "-")  head: \(.head // "-")",
		(.sandbox // empty | "  sandbox: \(.name) (\(.backend))"),
		(.steps[] | "  \(.name) (\(.run)) \(if .exit == 0 then "ok" elif .reason == "timeout" then "FAIL timeout" elif .reason == "exit" or .reason == null then "FAIL exit \(.exit)" else "ERROR \(.reason)" end) \(.ms | secs)"),
		"  breaker: \(.breaker) (streak \(.streak))",
		(if .reused then empty else "  logs: .forge/runs/\(.run)/" end)
		| printable'
}
