# forge-sandbox.sh — one sandbox per git worktree, whichever the backend
# (SPEC 4.1, 4.5): its name, the configuration the mount plan reads, the
# registry, the records of what it was created with and their drift, the
# bring-up lock, the choice of backend, doctor for both, and one prune loop.
# The plan is forge-plan.sh's; each backend's renderer and lifecycle are
# forge-msb.sh's and forge-bwrap.sh's.
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh
# shellcheck disable=SC3043 # local: dash, bash and busybox ash all have it

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

# forge_sandbox_cfg_value TAG: sets forge_cfg_value (and forge_cfg_key) to
# the value of the single-valued key TAG. Returns 1 when it is not set.
# Exits 65 when the value has a newline or NUL byte.
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
		forge_cfg_value=$forge_cfg_val
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

# --- records ---------------------------------------------------------------------

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
	local mounts
	forge_shell_quote "$1"
	forge_sec_up="forge-sandbox up $forge_quoted"
	if [ "$4" = bwrap ]; then
		forge_bwrap_running "$2" ||
			forge_die 69 "the namespace sandbox $2 for $1 is not running; start it with: $forge_sec_up"
		mounts=
		[ ! -f "$forge_bwrap_dir/mounts" ] || mounts=$(cat -- "$forge_bwrap_dir/mounts") || mounts=
	else
		if ! forge_msb_find; then
			forge_require_tool jq
			forge_config_load "$1"
			[ "$(forge_config_get sandbox.backend)" != msb ] || forge_msb_require
			forge_die 69 "no sandbox for $1 ($2); start it with: $forge_sec_up"
		fi
		forge_require_tool jq
		forge_msb_status "$2"
		[ -n "$forge_msb_status" ] ||
			forge_die 69 "no sandbox for $1 ($2); start it with: $forge_sec_up"
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

# forge_sandbox_record_file ROOT NAME: sets forge_sandbox_record to the file
# in ROOT's .forge/ that records what sandbox NAME was created with.
forge_sandbox_record_file() {
	forge_sandbox_record=$1/.forge/sandbox/$2
}

# forge_sandbox_record_safe ROOT NAME [create]: true when the record file of
# sandbox NAME may be written or removed: .forge and .forge/sandbox are real
# folders (with "create", a missing sandbox/ is made), and neither the record
# nor its lock is a symbolic link (forge_state_path decides). A repository is
# untrusted: nothing is written or removed through a link out of .forge/.
forge_sandbox_record_safe() {
	forge_sandbox_record_file "$1" "$2"
	# .forge/ may come from a hostile clone: forge_state_path's rule.
	forge_state_dir=$1/.forge
	forge_state_path "$forge_sandbox_record" file &&
		forge_state_path "$forge_sandbox_record.lock" file || return 1
	[ -d "$1/.forge" ] || { [ "${3:-}" = create ] && mkdir -m 700 -- "$1/.forge" 2>/dev/null; } || return 1
	[ -d "$1/.forge/sandbox" ] || { [ "${3:-}" = create ] && mkdir -- "$1/.forge/sandbox" 2>/dev/null; } || return 1
	# Made just now: checked again, so a link raced in is not written through.
	forge_state_path "$forge_sandbox_record" file
}

# forge_sandbox_record_create ROOT NAME: records what sandbox NAME is being
# created with, the things fixed at create time: egress flags, image,
# resources, the env names passed in and the secrets (ENV@HOST,... each;
# names and hosts only, never a value), the last two space-separated.
forge_sandbox_record_create() {
	forge_clock
	forge_sandbox_fixed_lists
	if forge_exclude_forge_dir "$1" && forge_sandbox_record_safe "$1" "$2" create &&
		forge_state set "$forge_sandbox_record" "egress=$forge_sandbox_egress" \
			"image=$forge_sandbox_image" "resources=$forge_sandbox_resources" \
			"env=$forge_sandbox_env_list" "secrets=$forge_sandbox_secret_list" "created=$forge_ts"; then
		return 0
	fi
	forge_warn "cannot record what $2 is created with in $1/.forge/sandbox/$2${forge_state_refusal:+: $forge_state_refusal}"
}

# forge_sandbox_record_remove ROOT NAME: removes sandbox NAME's record.
forge_sandbox_record_remove() {
	forge_sandbox_record_safe "$1" "$2" || return 0
	rm -f -- "$forge_sandbox_record" "$forge_sandbox_record.lock"
}

# forge_sandbox_fixed_lists: sets forge_sandbox_env_list and
# forge_sandbox_secret_list to the plan's env names and secrets
# (forge_sandbox_env, forge_sandbox_secrets), one line each, space-separated
# (no name or host holds a space), as the record keeps them.
forge_sandbox_fixed_lists() {
	forge_sandbox_env_list=$(printf '%s' "$forge_sandbox_env" | tr '\n' ' ')
	forge_sandbox_env_list=${forge_sandbox_env_list% }
	forge_sandbox_secret_list=$(printf '%s' "$forge_sandbox_secrets" | tr '\n' ' ')
	forge_sandbox_secret_list=${forge_sandbox_secret_list% }
}

# forge_sandbox_drift_check ROOT NAME [BACKEND]: warns when the configured
# egress flags, image, resources, env names or (namespace backend, BACKEND
# bwrap) secrets differ from those sandbox NAME was created with (all fixed
# at create time), with how to apply them. (msb's secrets are converged at
# every up: forge_sandbox_secrets_converge.) Keys a record lacks (an older
# forge wrote it) are not compared.
forge_sandbox_drift_check() {
	local disk key keys said was
	forge_sandbox_record_safe "$1" "$2" && [ -f "$forge_sandbox_record" ] || return 0
	was=$(forge_state dump "$forge_sandbox_record" 2>/dev/null) || return 0
	said='' disk=
	forge_sandbox_fixed_lists
	keys='egress image resources env'
	[ "${3:-msb}" != bwrap ] || keys="$keys secrets"
	for key in $keys; do
		case $was in
		"$key="* | *"
$key="*) ;;
		*) continue ;;
		esac
		forge_dc_old=$(forge_state get "$forge_sandbox_record" "$key" '' 2>/dev/null) || continue
		case $key in
		egress) forge_dc_new=$forge_sandbox_egress ;;
		image) forge_dc_new=$forge_sandbox_image ;;
		resources) forge_dc_new=$forge_sandbox_resources ;;
		env) forge_dc_new=$forge_sandbox_env_list ;;
		secrets) forge_dc_new=$forge_sandbox_secret_list ;;
		esac
		[ "$forge_dc_old" != "$forge_dc_new" ] || continue
		if [ -z "$said" ]; then
			forge_warn "$2 differs from the configuration in what is fixed when a sandbox is created (recorded in $forge_sandbox_record); recreate it with: forge-sandbox up --recreate (keeps the cache and docker volumes)"
			said=1
		fi
		forge_warn "  $key: created with: ${forge_dc_old:-(none)}"
		forge_warn "  $key: configured:   ${forge_dc_new:-(none)}"
		if [ "$key" = resources ] &&
			[ "${forge_dc_old#* * }" != "${forge_dc_new#* * }" ]; then
			disk=1
		fi
	done
	[ -z "$disk" ] ||
		forge_warn "  a disk keeps the size its volume was made with: a new dockerDisk or cacheDisk needs forge-sandbox rm (which drops the volumes), then up"
	return 0
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

# forge_sandbox_wait_setting: sets forge_sandbox_wait to FORGE_SANDBOX_WAIT
# (default 30), how many seconds up waits for a busy sandbox or its lock.
# Exits 64 when it is not a whole number.
forge_sandbox_wait_setting() {
	forge_sandbox_wait=${FORGE_SANDBOX_WAIT:-30}
	forge_is_uint "$forge_sandbox_wait" ||
		forge_die 64 "FORGE_SANDBOX_WAIT must be a whole number of seconds, not '$forge_sandbox_wait'"
}

# forge_sandbox_lock NAME: takes the lock on bringing up sandbox NAME, the
# folder ${XDG_STATE_HOME:-$HOME/.local/state}/forge/sandboxes/NAME.up made
# with mkdir (atomic) and owned by this process (its "owner" file: PID and
# start time). Not a flock: msb's or the sandbox's processes would inherit
# the descriptor and hold it. A lock whose owner is gone (a killed run), or
# still without an owner 10 seconds after it was made (a run killed while
# taking it), is broken (forge_sandbox_lock_break) and taken anew.
# Waits up to FORGE_SANDBOX_WAIT (30) seconds, then exits 75.
forge_sandbox_lock() {
	local dir gone tries
	forge_sandbox_registry "$1"
	dir=$forge_sandbox_registry_dir/$1.up
	forge_sandbox_wait_setting
	forge_sl_wait=$forge_sandbox_wait
	mkdir -p -- "$forge_sandbox_registry_dir" 2>/dev/null ||
		forge_die 73 "cannot create $forge_sandbox_registry_dir"
	tries=0 gone=0
	until mkdir -m 700 -- "$dir" 2>/dev/null; do
		if [ -L "$dir" ] || { [ -e "$dir" ] && [ ! -d "$dir" ]; }; then
			forge_die 73 "$dir is not a folder; refusing to use it as a lock"
		fi
		if [ ! -e "$dir" ]; then
			# Released between the mkdir and the look: try again at once. A
			# mkdir that keeps failing with nothing there is an error of its
			# own (a folder removed, no permission), said with mkdir's words.
			gone=$((gone + 1))
			[ "$gone" -lt 3 ] && continue
			mkdir -m 700 -- "$dir" && break
			[ -e "$dir" ] || forge_die 73 "cannot create the lock $dir"
			continue
		fi
		if forge_sandbox_lock_stale "$dir"; then
			forge_sandbox_lock_break "$dir" ||
				forge_die 75 "cannot break the stale lock $dir"
			continue
		fi
		[ "$tries" -lt "$((forge_sl_wait * 10))" ] ||
			forge_die 75 "$1 is being brought up by another process (lock $dir); try again later"
		[ "$tries" != 0 ] || forge_say "waiting for another process bringing up $1"
		sleep 0.1
		tries=$((tries + 1))
	done
	# Written whole, then renamed: an owner file is never seen half written.
	{ forge_owner >"$dir/owner.$$" && mv -f -- "$dir/owner.$$" "$dir/owner"; } ||
		forge_die 73 "cannot write $dir/owner"
}

# forge_sandbox_lock_stale DIR: true when the lock folder DIR is abandoned:
# its owner file names a process that is gone, or it has none 10 seconds
# after it was made (its maker writes one at once).
forge_sandbox_lock_stale() {
	local made
	if [ -f "$1/owner" ]; then
		! forge_owner_alive "$1/owner"
		return
	fi
	made=$(stat -c %Y -- "$1" 2>/dev/null) || return 1
	[ "$(date +%s)" -gt "$((made + 10))" ]
}

# forge_sandbox_lock_break DIR: removes the abandoned lock folder DIR. Two
# waiters may find it abandoned at once, and the first may take the lock
# anew before the second acts: so the break is made under a flock on
# DIR.break (held only by this subshell, which starts nothing) and the lock
# is checked again under it. The folder is renamed first, so no one sees
# a half-removed lock.
forge_sandbox_lock_break() (
	forge_require_tool flock
	if [ -L "$1.break" ] || { [ -e "$1.break" ] && [ ! -f "$1.break" ]; }; then
		forge_die 73 "$1.break is not a regular file; refusing to use it"
	fi
	exec 7>>"$1.break" || exit 1
	flock -w 10 7 || exit 1
	if [ -d "$1" ] && forge_sandbox_lock_stale "$1"; then
		mv -- "$1" "$1.stale.$$" || exit 1
		rm -rf -- "$1.stale.$$"
	fi
)

# forge_sandbox_unlock NAME: releases the lock forge_sandbox_lock took, if
# this process holds it.
forge_sandbox_unlock() {
	local dir me
	forge_sandbox_registry "$1"
	dir=$forge_sandbox_registry_dir/$1.up
	forge_is_real_dir "$dir" || return 0
	me=$(forge_owner)
	forge_read_file "$dir/owner" 2>/dev/null || return 0
	[ "$forge_file" = "$me" ] || return 0
	rm -rf -- "$dir"
}

# --- choosing the backend, and doctor for both -------------------------------------

# forge_bwrap_probe: sets forge_bwrap_probe to available when bwrap can make
# a user and a network namespace here, else to why not.
forge_bwrap_probe() {
	if ! command -v bwrap >/dev/null 2>&1; then
		forge_bwrap_probe='bwrap (bubblewrap) is not installed'
		return 0
	fi
	if forge_bwrap_probe_out=$(bwrap --unshare-user --unshare-net --ro-bind / / true 2>&1 </dev/null); then
		forge_bwrap_probe=available
	else
		forge_bwrap_probe="bwrap cannot create user and network namespaces here: ${forge_bwrap_probe_out:-no message}"
	fi
}

# forge_sandbox_backend [BACKEND]: sets forge_backend to msb or bwrap: BACKEND
# when given (plan --backend), else sandbox.backend (forge_config_load
# first). auto: msb when msb doctor says the host runs microVMs, else bwrap
# when it works, else exit 69 naming both.
forge_sandbox_backend() {
	forge_backend=${1:-}
	if [ -z "$forge_backend" ]; then
		forge_backend=$(forge_config_get sandbox.backend) || forge_die 70 "jq failed while reading sandbox.backend"
		[ -n "$forge_backend" ] || forge_backend=auto
	fi
	case $forge_backend in
	msb | bwrap) return 0 ;;
	auto) ;;
	*) forge_die 65 "configuration key sandbox.backend: '$forge_backend' is not auto, msb or bwrap" ;;
	esac
	forge_msb_doctor
	if [ "$forge_msb_doctor" = available ]; then
		forge_backend=msb
		return 0
	fi
	forge_bwrap_probe
	if [ "$forge_bwrap_probe" = available ]; then
		forge_backend=bwrap
		return 0
	fi
	forge_error "no sandbox backend works on this host:"
	forge_error "  msb: $forge_msb_doctor (see forge-sandbox doctor)"
	forge_error "  bwrap: $forge_bwrap_probe"
	exit 69
}

# forge_sandbox_doctor: reports both backends (msb's verdict as before; the
# namespace backend with how its limits are set) and exits: 0 when the
# backend sandbox.backend selects is available (auto: either), else 69 (75
# when msb is selected and its doctor gave no answer). Reads the
# configuration of the worktree in the current directory, if any.
forge_sandbox_doctor() {
	local limits root want
	root=
	! forge_sandbox_locate . 2>/dev/null || root=$forge_sandbox_root
	forge_config_load "$root"
	want=$(forge_config_get sandbox.backend) || forge_die 70 "jq failed while reading sandbox.backend"
	case ${want:=auto} in
	auto | msb | bwrap) ;;
	*) forge_die 65 "configuration key sandbox.backend: '$want' is not auto, msb or bwrap" ;;
	esac
	forge_msb_doctor
	if [ "$forge_msb_doctor" = available ]; then
		printf 'available: %s can run microVMs on this host\n' "$forge_msb"
	elif [ "$want" = msb ]; then
		forge_msb_doctor_report
	else
		# Not the selected backend: its state is information, not an error.
		forge_sandbox_doctor_msb_note
	fi
	# The namespace backend's report goes to stderr, beside msb's.
	forge_bwrap_probe
	forge_bwrap_cgroups forge-doctor
	if forge_bwrap_limits_possible; then
		limits="memory and cpu limits through cgroup $forge_bwrap_cgroup_kind, plus CPU affinity"
	else
		limits="no writable cgroup (${forge_bwrap_cgroup_kind:-none found}): CPU affinity only, no memory limit"
	fi
	if [ "$forge_bwrap_probe" = available ]; then
		forge_say "bwrap: available: namespace sandboxes work on this host; $limits"
	else
		forge_say "bwrap: unavailable: $forge_bwrap_probe"
	fi
	if ! forge_net_open_check; then
		forge_say "bwrap: open egress (no allow-list): unavailable: needs $forge_net_missing; up refuses a namespace sandbox with open egress and no secrets (an allow-list, or secrets, go through forge's proxy and work)"
	else
		forge_say "bwrap: open egress (no allow-list): available (slirp4netns, nft; with secrets, through forge's proxy instead)"
	fi
	forge_say "sandbox.backend: $want"
	case $want/$forge_msb_doctor/$forge_bwrap_probe in
	msb/available/* | auto/available/*) forge_say "selected: msb (microVMs)" ;;
	bwrap/*/available) forge_say "selected: bwrap (namespace sandboxes), as sandbox.backend says" ;;
	auto/*/available) forge_say "selected: bwrap (namespace sandboxes): auto picks it because msb cannot run microVMs here" ;;
	msb/*) forge_say "selected: none: sandbox.backend is msb, which cannot run here" ;;
	bwrap/*) forge_say "selected: none: sandbox.backend is bwrap, which cannot run here" ;;
	*) forge_say "selected: none: neither backend can run here" ;;
	esac
	case $want/$forge_msb_doctor/$forge_bwrap_probe in
	msb/available/* | bwrap/*/available | auto/available/* | auto/*/available) exit 0 ;;
	msb/indeterminate/* | auto/indeterminate/*) exit 75 ;;
	esac
	exit 69
}

# forge_sandbox_doctor_msb_note: msb's state when it is not the selected
# backend, as plain information on stderr (its doctor's lines indented).
forge_sandbox_doctor_msb_note() {
	case $forge_msb_doctor in
	missing) forge_say "msb: not installed (FORGE_MSB unset or not executable, no msb on PATH)" ;;
	indeterminate) forge_say "msb: indeterminate: msb doctor gave no answer within ${forge_msb_doctor_secs}s" ;;
	*)
		forge_say "msb: unavailable: it cannot run microVMs on this host (msb doctor exited $forge_msb_doctor_rc):"
		printf '%s\n' "$forge_msb_doctor_said" | forge_printable_lines '    ' >&2
		;;
	esac
}

# forge_sandbox_msb_needed: true when ls and prune must have msb: the
# configuration (of the worktree in the current directory, if any) selects
# the msb backend. Otherwise they skip msb where it is missing.
forge_sandbox_msb_needed() {
	local root
	root=
	! forge_sandbox_locate . 2>/dev/null || root=$forge_sandbox_root
	forge_config_load "$root"
	[ "$(forge_config_get sandbox.backend)" = msb ]
}
