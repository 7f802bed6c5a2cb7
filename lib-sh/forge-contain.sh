# forge-contain.sh — forge-verify --sandbox (SPEC 3.6): the steps run in a
# sandbox of either backend, brought up as `forge-sandbox up` does it
# (forge_sandbox_prepare, forge_sandbox_bring_up), with each step's timeout
# enforced from the host. For --isolated, a sandbox of the copy: ephemeral
# (removed with the run) for a cold copy and for a warm slot alike.
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh

# forge_contain_begin ROOT [COPY cold|warm]: brings up the sandbox the steps
# run in: the worktree's own (ROOT), or with COPY a sandbox of the same
# configuration whose worktree is the copy (the real one is not mounted).
# The configuration is the one loaded for ROOT (forge_config_load first).
# Sets forge_contain_name, forge_contain_backend, forge_contain_dir (the
# physical directory the steps run in) and forge_record_sandbox (the record's
# "sandbox" value). A copy's sandbox (cold or warm) is
# forge_contain_ephemeral, for forge_contain_end. Exits 69 with the reason
# when no sandbox can be had: never a run on the host.
forge_contain_begin() {
	forge_contain_name='' forge_contain_ephemeral=
	if [ "$#" -ge 2 ]; then
		forge_canon_dir "$2" || forge_die 69 "cannot resolve the copy $2"
		forge_contain_dir=$forge_canon
		forge_sandbox_name_of "$forge_contain_dir" ||
			forge_die 69 "cannot name the sandbox of the copy $forge_contain_dir"
		forge_canon_dir "$1" || forge_die 69 "cannot resolve $1"
		forge_contain_source=$forge_canon
	else
		forge_sandbox_locate "$1" || forge_die 69 "cannot locate the worktree of $1"
		forge_contain_dir=$forge_sandbox_root forge_contain_source=
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
	forge_contain_mode=
	# In a subshell: whatever up dies of (a missing image, a busy msb, a
	# bwrap that fails) becomes one ERROR with exit 69 here. Its messages go
	# to stderr, or with -q into the run's folder, shown only on failure.
	# In the background, so that set -e holds in it (an || would lift it).
	forge_contain_log=${forge_run_dir:-${TMPDIR:-/tmp}}/sandbox.log
	if [ "${forge_quiet:-0}" = 1 ]; then
		forge_contain_up >"$forge_contain_log" 2>&1 &
	else
		forge_contain_up >&2 &
	fi
	forge_contain_up_pid=$!
	forge_contain_status=0
	wait "$forge_contain_up_pid" || forge_contain_status=$?
	forge_contain_up_pid=
	# Held for this process: released even when the start died.
	forge_sandbox_unlock "$forge_contain_name"
	[ "$forge_contain_status" = 0 ] || [ "${forge_quiet:-0}" != 1 ] || forge_printable_lines <"$forge_contain_log" >&2
	[ "$forge_contain_status" = 0 ] ||
		forge_die 69 "no sandbox for the steps ($forge_contain_backend sandbox $forge_contain_name, exit $forge_contain_status); nothing was run"
	if [ "$forge_contain_backend" = msb ]; then
		forge_msb_require
	else
		forge_helper_path forge-shell
		forge_contain_shell=$forge_helper
	fi
	forge_record_sandbox=$(jq -cn --arg n "$forge_contain_name" --arg b "$forge_contain_backend" \
		'{name: $n, backend: $b}') || forge_die 70 "jq failed while recording the sandbox"
}

# forge_contain_up: prepares and brings up forge_contain_name in a subshell
# (internal to forge_contain_begin). For a copy, the mount plan is made for
# the copy with the source hidden and the object stores forge_copy_repo
# recorded as the ones it borrows (forge_sandbox_prepare's SOURCE, STORES).
forge_contain_up() (
	if [ -n "$forge_contain_source" ]; then
		forge_sandbox_prepare "$forge_contain_dir" "$forge_contain_name" create "$forge_contain_source" "${forge_copy_stores:-}"
	else
		forge_sandbox_prepare "$forge_contain_dir" "$forge_contain_name" create
	fi
	forge_sandbox_bring_up "$forge_contain_dir" "$forge_contain_name" "$forge_contain_mode"
)

# forge_contain_exec TIMEOUT COMMAND [ARG...]: replaces the shell with
# forge-timeout running COMMAND for at most TIMEOUT seconds: on the host, or
# with forge_contain_name set, in that sandbox in the current (physical)
# directory, with the FORGE_VERIFY* and FORGE_CHANGE variables the host
# would give it. The namespace backend kills what the step left running in
# its process group when it ends, and the whole group when forge-timeout
# kills the client.
forge_contain_exec() {
	forge_ce_limit=$1
	shift
	forge_helper_path forge-timeout
	if [ -z "${forge_contain_name:-}" ]; then
		exec "$forge_helper" -k 5 "$forge_ce_limit" "$@"
	fi
	# env sets the variables inside and runs COMMAND as argv (also one
	# named "-e": env takes no option after a variable); a COMMAND whose name
	# has a '=' (env would take it for a variable) goes through sh's exec.
	case $1 in *=*) set -- sh -c 'exec "$@"' forge-step "$@" ;; esac
	set -- env FORGE_VERIFY=1 "FORGE_VERIFY_ISOLATED=${FORGE_VERIFY_ISOLATED:-0}" \
		"FORGE_VERIFY_SOURCE=${FORGE_VERIFY_SOURCE:-}" ${FORGE_CHANGE+"FORGE_CHANGE=$FORGE_CHANGE"} "$@"
	if [ "$forge_contain_backend" = msb ]; then
		exec "$forge_helper" -k 5 "$forge_ce_limit" \
			"$forge_msb" exec --quiet "$forge_contain_name" --no-tty -w "$(pwd -P)" -- "$@"
	fi
	FORGE_SANDBOX_CONTAINER=$forge_contain_name
	export FORGE_SANDBOX_CONTAINER
	exec "$forge_helper" -k 5 "$forge_ce_limit" "$forge_contain_shell" --exec-kill-group "$@"
}

# forge_contain_end: removes a cold copy's ephemeral sandbox (everything in
# it killed). Safe to call more than once, and when none was made.
forge_contain_end() {
	# An interrupted start first: nothing may be started after the removal.
	if [ -n "${forge_contain_up_pid:-}" ]; then
		kill -TERM "$forge_contain_up_pid" 2>/dev/null || :
		wait "$forge_contain_up_pid" 2>/dev/null || :
		forge_contain_up_pid=
		forge_sandbox_unlock "$forge_contain_name"
	fi
	[ -n "${forge_contain_ephemeral:-}" ] || return 0
	forge_ced_name=$forge_contain_ephemeral
	forge_contain_ephemeral=
	if forge_bwrap_exists "$forge_ced_name"; then
		# In a subshell: its lifecycle lock (fd 8) goes with it.
		(forge_bwrap_remove "$forge_ced_name") ||
			forge_warn "could not remove the sandbox $forge_ced_name (forge-sandbox prune will)"
	elif [ "$forge_contain_backend" = msb ] && forge_msb_find; then
		forge_sandbox_remove "$forge_ced_name" ||
			forge_warn "could not remove the sandbox $forge_ced_name (forge-sandbox prune will)"
	fi
}

# forge_contain_forget DIR: removes the sandboxes of the copies in DIR (a
# cold copy's folder, a warm slot) that forge-verify --prune or the pruning
# of a killed run's copy is about to delete: everything in them is killed.
forge_contain_forget() {
	for forge_cf_copy in "$1"/*/ "$1"/.[!.]*/; do
		forge_cf_copy=${forge_cf_copy%/}
		{ [ -d "$forge_cf_copy" ] && [ ! -L "$forge_cf_copy" ]; } || continue
		forge_canon_dir "$forge_cf_copy" || continue
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
