# forge-verify-sandbox.sh — forge-verify --sandbox (SPEC 3.6): the steps run in a
# sandbox of either backend, brought up as `forge-sandbox up` does it
# (forge_sandbox_prepare, forge_sandbox_bring_up), with each step's timeout
# enforced from the host. For --isolated, a sandbox of the copy: ephemeral
# (removed with the run) for a cold copy and for a warm slot alike.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_contain_begin ROOT [COPY cold|warm]: brings up the sandbox the steps
# run in: the worktree's own (ROOT), or with COPY a sandbox of the same
# configuration whose worktree is the copy (the real one is not mounted).
# The configuration is the one loaded for ROOT (forge_config_load first).
# Sets forge_contain_name, forge_contain_backend, forge_contain_shell (for
# the namespace backend: the forge-shell client steps run through) and
# forge_record_sandbox (the record's "sandbox" value). A copy's sandbox
# (cold or warm) is forge_contain_ephemeral, for forge_contain_end. Exits 69
# with the reason when no sandbox can be had: never a run on the host.
forge_contain_begin() {
	local dir source log status started
	forge_contain_name='' forge_contain_ephemeral=
	if [ "$#" -ge 2 ]; then
		forge_canon_dir "$2" || forge_die 69 "cannot resolve the copy $2"
		dir=$forge_canon
		forge_sandbox_name_of "$dir" ||
			forge_die 69 "cannot name the sandbox of the copy $dir"
		forge_canon_dir "$1" || forge_die 69 "cannot resolve $1"
		source=$forge_canon
	else
		forge_sandbox_locate "$1" || forge_die 69 "cannot locate the worktree of $1"
		dir=$forge_sandbox_root source=
	fi
	forge_contain_name=$forge_sandbox_name
	forge_sandbox_backend ''
	forge_contain_backend=$forge_backend
	# Said before anything is made, so that cleanup covers a partial start.
	# A copy's sandbox, a warm slot's too, lives for the run: nothing of it
	# may run on while the host resets the slot (a process swapping a folder
	# for a link to /root under the reset's checkout would have the host
	# write there). One a killed run left is removed before the next reset.
	[ -z "${3:-}" ] || forge_contain_ephemeral=$forge_contain_name
	# The worktree's own sandbox stays up after the run: said once when this
	# run is what started it (below).
	started=
	[ -n "${3:-}" ] || forge_contain_running "$forge_contain_name" || started=1
	# In a subshell: whatever up dies of (a missing image, a busy msb, a
	# bwrap that fails) becomes one ERROR with exit 69 here. Its messages go
	# to stderr, or with -q into the run's folder, shown only on failure.
	# In the background, so that set -e holds in it (an || would lift it).
	log=${forge_run_dir:-${TMPDIR:-/tmp}}/sandbox.log
	# A copy's sandbox mounts the object stores forge_copy_repo recorded.
	set -- "$dir" "$forge_contain_name" "$source"
	[ -z "$source" ] || set -- "$@" "${forge_copy_stores:-}"
	if [ "${forge_quiet:-0}" = 1 ]; then
		forge_contain_up "$@" >"$log" 2>&1 &
	else
		forge_contain_up "$@" >&2 &
	fi
	forge_contain_up_pid=$!
	status=0
	wait "$forge_contain_up_pid" || status=$?
	forge_contain_up_pid=
	# Held for this process: released even when the start died.
	forge_sandbox_unlock "$forge_contain_name"
	[ "$status" = 0 ] || [ "${forge_quiet:-0}" != 1 ] || forge_printable_lines <"$log" >&2
	[ "$status" = 0 ] ||
		forge_die 69 "no sandbox for the steps ($forge_contain_backend sandbox $forge_contain_name, exit $status); nothing was run"
	if [ -n "$started" ] && [ "${forge_quiet:-0}" != 1 ]; then
		forge_shell_quote "$dir"
		forge_say "the sandbox $forge_contain_name for $dir is left running; forge-sandbox rm $forge_quoted removes it"
	fi
	if [ "$forge_contain_backend" = msb ]; then
		forge_msb_require
	else
		forge_helper_path forge-shell
		forge_contain_shell=$forge_helper
	fi
	forge_record_sandbox=$(jq -cn --arg n "$forge_contain_name" --arg b "$forge_contain_backend" \
		'{name: $n, backend: $b}') || forge_die 70 "jq failed while recording the sandbox"
}

# forge_contain_running NAME: true when sandbox NAME is up on
# forge_contain_backend (msb: msb ls lists it; an msb that cannot say counts
# as not running).
forge_contain_running() {
	if [ "$forge_contain_backend" = bwrap ]; then
		forge_bwrap_running "$1"
		return
	fi
	forge_msb_find || return 1
	(forge_msb_status "$1" && [ -n "$forge_msb_status" ]) >/dev/null 2>&1
}

# forge_contain_up DIR NAME SOURCE [STORES]: prepares and brings up the
# sandbox NAME of the worktree DIR (internal to forge_contain_begin, which
# runs it in the background: a subshell). For a copy, SOURCE is the source
# worktree the mount plan hides and STORES the object stores the copy
# borrows (one a line): forge_sandbox_prepare's SOURCE and STORES.
forge_contain_up() {
	if [ -n "$3" ]; then
		forge_sandbox_prepare "$1" "$2" create "$3" "${4:-}"
	else
		forge_sandbox_prepare "$1" "$2" create
	fi
	forge_sandbox_bring_up "$1" "$2" ''
}

# forge_contain_exec TIMEOUT COMMAND [ARG...]: replaces the shell with
# forge-timeout running COMMAND for at most TIMEOUT seconds: on the host, or
# with forge_contain_name set, in that sandbox in the current (physical)
# directory, with the FORGE_VERIFY* and FORGE_CHANGE variables the host
# would give it. The namespace backend kills what the step left running in
# its process group when it ends, and the whole group when forge-timeout
# kills the client.
forge_contain_exec() {
	local limit
	limit=$1
	shift
	forge_helper_path forge-timeout
	if [ -z "${forge_contain_name:-}" ]; then
		exec "$forge_helper" -k 5 "$limit" "$@"
	fi
	# env sets the variables inside and runs COMMAND as argv (also one
	# named "-e": env takes no option after a variable); a COMMAND whose name
	# has a '=' (env would take it for a variable) goes through sh's exec.
	case $1 in *=*) set -- sh -c 'exec "$@"' forge-step "$@" ;; esac
	set -- env FORGE_VERIFY=1 "FORGE_VERIFY_ISOLATED=${FORGE_VERIFY_ISOLATED:-0}" \
		"FORGE_VERIFY_SOURCE=${FORGE_VERIFY_SOURCE:-}" ${FORGE_CHANGE+"FORGE_CHANGE=$FORGE_CHANGE"} "$@"
	if [ "$forge_contain_backend" = msb ]; then
		exec "$forge_helper" -k 5 "$limit" \
			"$forge_msb" exec --quiet "$forge_contain_name" --no-tty -w "$(pwd -P)" -- "$@"
	fi
	FORGE_SANDBOX_CONTAINER=$forge_contain_name
	export FORGE_SANDBOX_CONTAINER
	exec "$forge_helper" -k 5 "$limit" "$forge_contain_shell" --exec-kill-group "$@"
}

# forge_contain_end: stops a bring-up still running (an interrupted start),
# and removes a copy's ephemeral sandbox, cold or warm (everything in it
# killed). Safe to call more than once, and when none was made.
forge_contain_end() {
	local name
	# An interrupted start first: nothing may be started after the removal.
	if [ -n "${forge_contain_up_pid:-}" ]; then
		kill -TERM "$forge_contain_up_pid" 2>/dev/null || :
		wait "$forge_contain_up_pid" 2>/dev/null || :
		forge_contain_up_pid=
		forge_sandbox_unlock "$forge_contain_name"
	fi
	[ -n "${forge_contain_ephemeral:-}" ] || return 0
	name=$forge_contain_ephemeral
	forge_contain_ephemeral=
	if forge_bwrap_exists "$name"; then
		# In a subshell: its lifecycle lock (fd 8) goes with it.
		(forge_bwrap_remove "$name") ||
			forge_warn "could not remove the sandbox $name (forge-sandbox prune will)"
	elif [ "$forge_contain_backend" = msb ] && forge_msb_find; then
		forge_sandbox_remove "$name" ||
			forge_warn "could not remove the sandbox $name (forge-sandbox prune will)"
	fi
}

# forge_contain_forget DIR: removes the sandboxes of the copies in DIR (a
# cold copy's folder, a warm slot) that forge-verify --prune or the pruning
# of a killed run's copy is about to delete: everything in them is killed.
forge_contain_forget() {
	local copy
	# No sandbox state at all (no namespace sandbox's folder, no msb
	# registry entry: every sandbox's name starts with forge-): nothing to
	# remove, and no name to compute.
	forge_bwrap_state forge-
	forge_sandbox_registry forge-
	for copy in "$forge_bwrap_root"/forge-* "$forge_sandbox_registry_dir"/forge-* ''; do
		[ -n "$copy" ] || return 0
		! forge_path_exists "$copy" || break
	done
	for copy in "$1"/*/ "$1"/.[!.]*/; do
		copy=${copy%/}
		forge_is_real_dir "$copy" || continue
		forge_canon_dir "$copy" || continue
		forge_sandbox_name_of "$forge_canon" || continue
		if forge_bwrap_exists "$forge_sandbox_name"; then
			# In a subshell: its lifecycle lock (fd 8) goes with it, and the
			# caller's fd 8 (a warm slot's lock) stays as it was.
			(forge_bwrap_remove "$forge_sandbox_name") ||
				forge_warn "could not remove the sandbox $forge_sandbox_name"
			continue
		fi
		forge_sandbox_registry "$forge_sandbox_name"
		{ [ -f "$forge_sandbox_registry_file" ] && forge_msb_find; } || continue
		forge_sandbox_remove "$forge_sandbox_name" ||
			forge_warn "could not remove the sandbox $forge_sandbox_name (forge-sandbox prune will)"
	done
	return 0
}
