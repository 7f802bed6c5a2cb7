# forge-sandbox.sh — one sandbox per git worktree, whichever the backend
# (SPEC 4.1, 4.5): its name, the configuration the mount plan reads, the
# checks of values, the registry, one prune loop for both backends, and the
# plan and bring-up on the chosen backend. What a sandbox was created with
# and its drift are forge-sandbox-record.sh's, the bring-up lock
# forge-sandbox-lock.sh's, the choice of backend and doctor forge-doctor.sh's.
# The plan is forge-plan.sh's; the backends' renderers are forge-msb.sh's and
# forge-bwrap-render.sh's, their lifecycles forge-msb-lifecycle.sh's and
# forge-bwrap.sh's.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# --- naming ------------------------------------------------------------------

# forge_sandbox_locate [DIR]: sets forge_sandbox_root to the physical root of
# the worktree containing DIR (default: the current directory) and
# forge_sandbox_name to its sandbox's name. Returns 1 outside a worktree.
forge_sandbox_locate() {
	# Physical first: git may answer with a path relative to it.
	forge_canon_dir "${1:-.}" || return 1
	forge_repo_root "$forge_canon" || return 1
	forge_canon_dir "$forge_root" || return 1
	forge_sandbox_root=$forge_canon
	forge_sandbox_name_of "$forge_sandbox_root"
}

# forge_sandbox_name_of ROOT: sets forge_sandbox_name to forge-<slug>-<h>:
# slug from the basename of ROOT (lowercased, runs outside [a-z0-9.-] made
# one '-', '-' and '.' trimmed at both ends, cut to 40, "sandbox" if empty);
# h the first 8 hex digits of the SHA-256 of ROOT, the worktree's real path.
forge_sandbox_name_of() {
	local base hash slug
	base=${1%/}
	base=${base##*/}
	case $base in
	'' | *[!abcdefghijklmnopqrstuvwxyz0123456789.-]* | [.-]* | *[.-]) slug= ;;
	*) slug=$base ;;
	esac
	# A name that is its own slug (the common case) costs no process.
	if [ -z "$slug" ] || [ "${#slug}" -gt 40 ]; then
		slug=$(printf '%s' "$base" | LC_ALL=C tr 'A-Z\n' 'a-z_' |
			LC_ALL=C sed -e 's/[^a-z0-9.-][^a-z0-9.-]*/-/g' -e 's/^[.-]*//' -e 's/[.-]*$//' \
				-e 's/^\(.\{40\}\).*/\1/')
	fi
	[ -n "$slug" ] || slug=sandbox
	hash=$(printf '%s' "$1" | forge_sha256) || return 1
	forge_sandbox_name=forge-$slug-${hash%"${hash#????????}"}
}

# forge_sha256: prints the hex SHA-256 of standard input.
forge_sha256() {
	local line
	if command -v sha256sum >/dev/null 2>&1; then
		line=$(sha256sum) || return 1
	elif command -v openssl >/dev/null 2>&1; then
		line=$(openssl dgst -sha256 -r) || return 1
	else
		line=$(shasum -a 256) || return 1
	fi
	printf '%s\n' "${line%% *}"
}

# forge_sandbox_volumes NAME: sets forge_sandbox_docker_volume and
# forge_sandbox_cache_volume to NAME's named volumes.
forge_sandbox_volumes() {
	forge_sandbox_docker_volume=$1-docker-data
	forge_sandbox_cache_volume=$1-cache-data
}

# --- configuration -------------------------------------------------------------

# forge_sandbox_cfg_split LINE: sets forge_cfg_tag, forge_cfg_key and
# forge_cfg_val from one line of forge_sandbox_cfg.
forge_sandbox_cfg_split() {
	forge_cfg_tag=${1%%'	'*}
	forge_cfg_val=${1#*'	'}
	forge_cfg_key=${forge_cfg_val%%'	'*}
	case $forge_cfg_val in
	*'	'*) forge_cfg_val=${forge_cfg_val#*'	'} ;;
	*) forge_cfg_val= ;;
	esac
}

# forge_sandbox_cfg_value TAG: true when the single-valued key TAG is set:
# its line is then split (forge_sandbox_cfg_split), forge_cfg_val its value
# and forge_cfg_key its name. Returns 1 when it is not set. Exits 65 when
# the value has a newline or NUL byte.
forge_sandbox_cfg_value() {
	local line rest
	rest=$forge_sandbox_cfg
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		forge_sandbox_cfg_split "$line"
		if [ "$forge_cfg_tag" = X ] && [ "${forge_cfg_key}" = "$1" ]; then
			forge_die 65 "configuration key ${forge_cfg_val}: contains a newline or NUL byte"
		fi
		[ "$forge_cfg_tag" = "$1" ] || continue
		return 0
	done
	return 1
}

# --- values -------------------------------------------------------------------

# forge_image_ref_valid REF: true for an image reference forge passes on
# (plan, build-image): it starts with a letter or digit, so that no tool
# reads it as an option, and has only [A-Za-z0-9._/:@+-], the characters of
# docker's reference grammar ('+' separates the components of a digest's
# algorithm, as in sha256+b64u). forge-plan.jq's image_ref is the same rule.
forge_image_ref_valid() {
	case $1 in
	[A-Za-z0-9]*) ;;
	*) return 1 ;;
	esac
	case $1 in *[!A-Za-z0-9._/:@+-]*) return 1 ;; esac
}

# forge_env_name_valid NAME: true for a portable environment variable name.
forge_env_name_valid() {
	case $1 in
	[A-Za-z_]*) ;;
	*) return 1 ;;
	esac
	case $1 in *[!A-Za-z0-9_]*) return 1 ;; esac
}

# --- the registry --------------------------------------------------------------------

# forge_sandbox_registry NAME: sets forge_sandbox_registry_file to NAME's
# entry in the registry of sandboxes forge made (name -> worktree), which
# prune reads: ${XDG_STATE_HOME:-$HOME/.local/state}/forge/sandboxes/NAME.
forge_sandbox_registry() {
	forge_xdg_dir state || forge_xdg=/nonexistent/.local/state
	forge_sandbox_registry_dir=$forge_xdg/forge/sandboxes
	forge_sandbox_registry_file=$forge_sandbox_registry_dir/$1
}

# forge_sandbox_register NAME ROOT [BACKEND]: records that sandbox NAME serves
# the worktree ROOT, and its BACKEND (default msb; forge-shell reads it). A
# failure is a warning: only prune and forge-shell need it.
forge_sandbox_register() {
	forge_sandbox_registry "$1"
	if mkdir -p -- "$forge_sandbox_registry_dir" 2>/dev/null &&
		forge_state set "$forge_sandbox_registry_file" "worktree=$2" "backend=${3:-msb}" 2>/dev/null; then
		return 0
	fi
	forge_warn "cannot record $1 in $forge_sandbox_registry_dir; prune will leave it alone"
}

# forge_sandbox_register_mounts NAME MOUNTS: records in NAME's registry
# entry the host paths the sandbox sees (MOUNTS: forge_plan_mounts's "rw
# PATH"/"ro PATH" lines), ':'-separated: msb's paths cannot hold a ':'. The
# namespace backend keeps them in its state folder (forge_bwrap_start).
forge_sandbox_register_mounts() {
	local line list
	list=
	while IFS= read -r line; do
		[ -z "$line" ] || list=$list${list:+:}${line#r[ow] }
	done <<EOF
$2
EOF
	forge_sandbox_registry "$1"
	forge_state set "$forge_sandbox_registry_file" "mounts=$list" 2>/dev/null ||
		forge_warn "cannot record the mounts of $1 in $forge_sandbox_registry_dir"
}

# forge_sandbox_exec_check ROOT NAME CWD BACKEND: before an exec in sandbox
# NAME of the worktree ROOT on BACKEND (bwrap: it has a state folder; msb:
# it has not), exits 69 naming forge-sandbox up when the sandbox is not there
# (bwrap: not running; msb: msb ls does not list it; no msb: neither, unless
# the configuration selects msb: then msb's install hint), and 126 when the
# physical directory CWD is outside every host path the sandbox sees (the
# ones recorded at create; none recorded, no check): paths are identical
# inside, so there it would run elsewhere or not at all. Sets forge_msb
# for msb.
forge_sandbox_exec_check() {
	local mounts up_cmd
	forge_shell_quote "$1"
	up_cmd="forge-sandbox up $forge_quoted"
	if [ "$4" = bwrap ]; then
		forge_bwrap_running "$2" ||
			forge_die 69 "the namespace sandbox $2 for $1 is not running; start it with: $up_cmd"
		mounts=
		[ ! -f "$forge_bwrap_dir/mounts" ] || mounts=$(cat -- "$forge_bwrap_dir/mounts") || mounts=
	else
		if ! forge_msb_find; then
			forge_require_tool jq
			forge_config_load "$1"
			[ "$(forge_config_get sandbox.backend)" != msb ] || forge_msb_require
			forge_die 69 "no sandbox for $1 ($2); start it with: $up_cmd"
		fi
		forge_require_tool jq
		forge_msb_status "$2"
		[ -n "$forge_msb_status" ] ||
			forge_die 69 "no sandbox for $1 ($2); start it with: $up_cmd"
		forge_sandbox_registry "$2"
		mounts=
		[ ! -f "$forge_sandbox_registry_file" ] ||
			mounts=$(forge_state get "$forge_sandbox_registry_file" mounts '' 2>/dev/null) || mounts=
		mounts=$(printf '%s' "$mounts" | tr ':' '\n')
	fi
	[ -n "$mounts" ] || return 0
	! forge_sandbox_sees "$3" "$mounts" ||
		return 0
	forge_die 126 "$3 is outside the sandbox $2: it sees the host only at its mounts (the worktree $1 and the paths forge-sandbox plan lists), at the same paths; run the command from inside one of them, or mount the directory with sandbox.mounts"
}

# forge_sandbox_sees DIR MOUNTS: true when the physical directory DIR is one
# of MOUNTS ("rw PATH"/"ro PATH" lines, or paths, one a line) or lies in one.
forge_sandbox_sees() {
	local line
	while IFS= read -r line; do
		line=${line#r[ow] }
		[ -z "$line" ] || ! forge_path_within "$1" "$line" || return 0
	done <<EOF
$2
EOF
	return 1
}

# forge_sandbox_unregister NAME: removes NAME's registry entry.
forge_sandbox_unregister() {
	forge_sandbox_registry "$1"
	rm -f -- "$forge_sandbox_registry_file" "$forge_sandbox_registry_file.lock"
}

# --- rm and prune ------------------------------------------------------------------

# forge_sandbox_prune BACKEND [KEEP...]: removes every forge-* sandbox of
# BACKEND (msb or bwrap; for msb with its volumes, and the registry's
# entries of msb sandboxes already gone) whose recorded worktree no longer
# exists, except the KEEP names. A sandbox without a record (or whose
# record does not give its name) is left alone with a warning. Prints each
# removed name. Returns 1 when a removal failed. One loop for both backends.
forge_sandbox_prune() {
	local backend names file name rest keep k path failed how
	backend=$1
	shift
	if [ "$backend" = bwrap ]; then
		forge_bwrap_names
		names=$forge_bwrap_names
		how='forge-sandbox rm in its worktree'
	else
		forge_msb_forge_names
		names=$forge_msb_names
		how='msb rm'
		forge_sandbox_registry x
		# Registry entries of sandboxes already gone: their volumes may remain.
		for file in "$forge_sandbox_registry_dir"/forge-*; do
			[ -f "$file" ] || continue
			name=${file##*/}
			case $name in *.lock | *.break) continue ;; esac
			case $names in *"
$name
"* | "$name
"*) ;;
			*) names=$names$name'
' ;;
			esac
		done
	fi
	failed=0
	rest=$names
	while [ -n "$rest" ]; do
		name=${rest%%'
'*}
		rest=${rest#*'
'}
		keep=
		for k in "$@"; do
			[ "$k" != "$name" ] || keep=1
		done
		[ -z "$keep" ] || continue
		forge_sandbox_registry "$name"
		path=
		[ ! -f "$forge_sandbox_registry_file" ] ||
			path=$(forge_state get "$forge_sandbox_registry_file" worktree '' 2>/dev/null) || path=
		if [ -z "$path" ]; then
			forge_warn "$name: no record of its worktree; left alone (remove it with $how)"
			continue
		fi
		[ ! -d "$path" ] || continue
		forge_sandbox_name_of "$path"
		if [ "$forge_sandbox_name" != "$name" ]; then
			forge_warn "$name: its record names $path, which gives another name; left alone"
			continue
		fi
		if [ "$backend" = bwrap ]; then
			forge_bwrap_remove "$name"
		elif ! forge_sandbox_remove "$name"; then
			failed=1
			continue
		fi
		printf '%s\n' "$name"
	done
	return "$failed"
}

# --- either backend ------------------------------------------------------------------

# forge_sandbox_prepare ROOT NAME [create [SOURCE STORES]]: the plan of
# sandbox NAME for the worktree at ROOT on forge_backend (forge_sandbox_backend
# first), and its rendering by that backend: forge_sandbox_plan (msb) or
# forge_bwrap_plan. With "create", what up needs on disk is made; SOURCE and
# STORES: ROOT is an isolated copy of SOURCE (forge_plan).
forge_sandbox_prepare() {
	forge_plan "$1" "$2" "$forge_backend" "${3:-}" "${4:-}" "${5:-}"
	if [ "$forge_backend" = bwrap ]; then
		forge_bwrap_render "$1" "$2" "$forge_plan" "${3:-}"
	else
		forge_msb_render "$forge_plan"
	fi
}

# forge_sandbox_bring_up ROOT NAME [recreate|restart]: adopts or creates
# sandbox NAME on forge_backend, after forge_sandbox_prepare ROOT NAME create:
# what `forge-sandbox up` does (and forge-verify --sandbox).
# Concurrent ups of one sandbox (two forge-verify --sandbox runs, say) take
# turns (forge_sandbox_lock), so the second adopts what the first made.
forge_sandbox_bring_up() {
	forge_sandbox_lock "$2"
	if [ "$forge_backend" = bwrap ]; then
		forge_bwrap_up "$1" "$2" "${3:-}"
		# Created or adopted, it proves it contains before it is handed out.
		forge_check_up "$1" "$2"
	else
		forge_sandbox_up "$1" "$2" "${3:-}"
	fi
	forge_sandbox_unlock "$2"
}
