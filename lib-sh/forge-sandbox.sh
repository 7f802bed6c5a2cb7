# forge-sandbox.sh — one msb sandbox per git worktree (SPEC 4.1, 4.3): its
# name, the create argv ("the plan") built from the configuration, and the
# up / rm / prune logic over the msb calls of forge-msb.sh.
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh

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
	forge_sn_base=${1%/}
	forge_sn_base=${forge_sn_base##*/}
	forge_sn_slug=$(printf '%s' "$forge_sn_base" | LC_ALL=C tr 'A-Z\n' 'a-z_' |
		LC_ALL=C sed -e 's/[^a-z0-9.-][^a-z0-9.-]*/-/g' -e 's/^[.-]*//' -e 's/[.-]*$//' \
			-e 's/^\(.\{40\}\).*/\1/')
	[ -n "$forge_sn_slug" ] || forge_sn_slug=sandbox
	forge_sn_hash=$(printf '%s' "$1" | forge_sha256) || return 1
	forge_sandbox_name=forge-$forge_sn_slug-${forge_sn_hash%"${forge_sn_hash#????????}"}
}

# forge_sha256: prints the hex SHA-256 of standard input.
forge_sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum | sed 's/ .*//'
	elif command -v openssl >/dev/null 2>&1; then
		openssl dgst -sha256 -r | sed 's/ .*//'
	else
		shasum -a 256 | sed 's/ .*//'
	fi
}

# forge_sandbox_volumes NAME: sets forge_sandbox_docker_volume and
# forge_sandbox_cache_volume to NAME's named volumes.
forge_sandbox_volumes() {
	forge_sandbox_docker_volume=$1-docker-data
	forge_sandbox_cache_volume=$1-cache-data
}

# --- configuration -------------------------------------------------------------

# forge_sandbox_config: extracts the sandbox keys of the merged configuration
# (forge_config_load first) with one jq run into forge_sandbox_cfg: one
# "TAG<TAB>KEY<TAB>VALUE" line per value, KEY naming it for messages. A value
# with a newline or NUL byte comes as "X<TAB>TAG<TAB>KEY" instead, so that
# every line is one value and no value is ever split.
forge_sandbox_config() {
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_sandbox_cfg=$(printf '%s' "$forge_config" | jq -r '
	def bad: explode | any(. == 0 or . == 10);
	def out($tag; $key; $v):
	  ($v | if type == "string" then . else tojson end) as $s
	  | if ($s | bad) then "X\t\($tag)\t\($key)" else "\($tag)\t\($key)\t\($s)" end;
	.sandbox as $s
	| out("image"; "sandbox.image"; $s.image),
	  out("memory"; "sandbox.resources.memory"; $s.resources.memory),
	  out("cpus"; "sandbox.resources.cpus"; $s.resources.cpus),
	  out("dockerDisk"; "sandbox.resources.dockerDisk"; $s.resources.dockerDisk),
	  out("cacheDisk"; "sandbox.resources.cacheDisk"; $s.resources.cacheDisk),
	  out("projro"; "sandbox.mountProjectReadonly"; $s.mountProjectReadonly),
	  (if $s.toolOutputDir == null then empty else out("toolout"; "sandbox.toolOutputDir"; $s.toolOutputDir) end),
	  (if $s.scratchDir == null then empty else out("scratch"; "sandbox.scratchDir"; $s.scratchDir) end),
	  ($s.mounts // [] | to_entries[] | .key as $i | .value
	    | out(if .readonly == false then "mount_rw" else "mount_ro" end; "sandbox.mounts[\($i)]"; .host // "")),
	  (.loop.allowExternalDirectories // [] | to_entries[]
	    | out("ext"; "loop.allowExternalDirectories[\(.key)]"; .value)),
	  ($s.network.allow // [] | to_entries[] | out("allow"; "sandbox.network.allow[\(.key)]"; .value)),
	  ($s.network.env // [] | to_entries[] | out("env"; "sandbox.network.env[\(.key)]"; .value)),
	  ($s.network.secrets // [] | to_entries[] | .key as $i | .value
	    | out("secret"; "sandbox.network.secrets[\($i)]"; .env // ""),
	      (.hosts // [] | to_entries[] | out("shost"; "sandbox.network.secrets[\($i)].hosts[\(.key)]"; .value)))
	') || forge_die 70 "jq failed while reading the sandbox configuration"
	forge_sandbox_cfg=$forge_sandbox_cfg'
'
}

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
	forge_cv_rest=$forge_sandbox_cfg
	while [ -n "$forge_cv_rest" ]; do
		forge_cv_line=${forge_cv_rest%%'
'*}
		forge_cv_rest=${forge_cv_rest#*'
'}
		forge_sandbox_cfg_split "$forge_cv_line"
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

# forge_image_ref_valid REF: true for an image reference forge passes on:
# it starts with a letter or digit and has only [A-Za-z0-9._/:@+-].
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
	forge_sandbox_registry_dir=${XDG_STATE_HOME:-${HOME:-/nonexistent}/.local/state}/forge/sandboxes
	forge_sandbox_registry_file=$forge_sandbox_registry_dir/$1
}

# forge_sandbox_register NAME ROOT: records that sandbox NAME serves the
# worktree ROOT. A failure is a warning: only prune needs it.
forge_sandbox_register() {
	forge_sandbox_registry "$1"
	if mkdir -p -- "$forge_sandbox_registry_dir" 2>/dev/null &&
		forge_state set "$forge_sandbox_registry_file" "worktree=$2" 2>/dev/null; then
		return 0
	fi
	forge_warn "cannot record $1 in $forge_sandbox_registry_dir; prune will leave it alone"
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
# created with, the things fixed at create time: egress flags, image and
# resources.
forge_sandbox_record_create() {
	forge_clock
	if forge_exclude_forge_dir "$1" && forge_sandbox_record_safe "$1" "$2" create &&
		forge_state set "$forge_sandbox_record" "egress=$forge_sandbox_egress" \
			"image=$forge_sandbox_image" "resources=$forge_sandbox_resources" "created=$forge_ts"; then
		return 0
	fi
	forge_warn "cannot record what $2 is created with in $1/.forge/sandbox/$2${forge_state_refusal:+: $forge_state_refusal}"
}

# forge_sandbox_record_remove ROOT NAME: removes sandbox NAME's record.
forge_sandbox_record_remove() {
	forge_sandbox_record_safe "$1" "$2" || return 0
	rm -f -- "$forge_sandbox_record" "$forge_sandbox_record.lock"
}

# forge_sandbox_drift_check ROOT NAME: warns when the configured egress
# flags, image or resources differ from those sandbox NAME was created with
# (all fixed at create time), with how to apply them. Keys a record lacks
# (an older forge wrote it) are not compared.
forge_sandbox_drift_check() {
	forge_sandbox_record_safe "$1" "$2" && [ -f "$forge_sandbox_record" ] || return 0
	forge_dc_was=$(forge_state dump "$forge_sandbox_record" 2>/dev/null) || return 0
	forge_dc_said='' forge_dc_disk=
	for forge_dc_key in egress image resources; do
		case $forge_dc_was in
		"$forge_dc_key="* | *"
$forge_dc_key="*) ;;
		*) continue ;;
		esac
		forge_dc_old=$(forge_state get "$forge_sandbox_record" "$forge_dc_key" '' 2>/dev/null) || continue
		case $forge_dc_key in
		egress) forge_dc_new=$forge_sandbox_egress ;;
		image) forge_dc_new=$forge_sandbox_image ;;
		resources) forge_dc_new=$forge_sandbox_resources ;;
		esac
		[ "$forge_dc_old" != "$forge_dc_new" ] || continue
		if [ -z "$forge_dc_said" ]; then
			forge_warn "$2 differs from the configuration in what is fixed when a sandbox is created (recorded in $forge_sandbox_record); recreate it with: forge-sandbox up --recreate (keeps the cache and docker volumes)"
			forge_dc_said=1
		fi
		forge_warn "  $forge_dc_key: created with: ${forge_dc_old:-(none)}"
		forge_warn "  $forge_dc_key: configured:   ${forge_dc_new:-(none)}"
		if [ "$forge_dc_key" = resources ] &&
			[ "${forge_dc_old#* * }" != "${forge_dc_new#* * }" ]; then
			forge_dc_disk=1
		fi
	done
	[ -z "$forge_dc_disk" ] ||
		forge_warn "  a disk keeps the size its volume was made with: a new dockerDisk or cacheDisk needs forge-sandbox rm (which drops the volumes), then up"
	return 0
}

# --- up ----------------------------------------------------------------------------

# forge_sandbox_up ROOT NAME [recreate|restart]: adopts or creates sandbox
# NAME for the worktree at ROOT, after forge_sandbox_plan ROOT NAME create
# (which warns about unset secret variables). With "recreate", an existing
# sandbox is created anew from the current configuration (msb create
# --replace), keeping its volumes; with "restart", the secret convergence
# reboots it (msb modify --restart). Then prepares the cache disk, converges
# the secrets and warns about drift from what an adopted sandbox was created
# with. Exits 69 on an msb failure, 75 when the sandbox stays in a transient
# state.
forge_sandbox_up() {
	forge_su_mode=${3:-}
	forge_msb_require
	forge_msb_doctor
	case $forge_msb_doctor in
	available) ;;
	indeterminate) forge_warn "msb doctor gave no answer within ${forge_msb_doctor_secs}s: host support is indeterminate; going on" ;;
	*) forge_msb_doctor_report; exit 69 ;;
	esac

	forge_sandbox_wait=${FORGE_SANDBOX_WAIT:-30}
	forge_is_uint "$forge_sandbox_wait" ||
		forge_die 64 "FORGE_SANDBOX_WAIT must be a whole number of seconds, not '$forge_sandbox_wait'"
	forge_su_waited=0
	while :; do
		forge_msb_status "$2"
		case $forge_msb_status in
		'')
			forge_sandbox_create "$1" "$2"
			break
			;;
		Running | Stopped | Crashed)
			if [ "$forge_su_mode" = recreate ]; then
				forge_sandbox_create "$1" "$2" replace
				forge_msb_status=
				break
			fi
			forge_say "adopting $2 ($forge_msb_status)"
			forge_sandbox_register "$2" "$1"
			forge_sandbox_drift_check "$1" "$2"
			break
			;;
		Created | Starting | Draining | Paused)
			if [ "$forge_su_waited" -ge "$forge_sandbox_wait" ]; then
				forge_die 75 "$2 is still $forge_msb_status after ${forge_sandbox_wait}s; try again later"
			fi
			[ "$forge_su_waited" -gt 0 ] || forge_say "$2 is $forge_msb_status; waiting up to ${forge_sandbox_wait}s"
			sleep 1
			forge_su_waited=$((forge_su_waited + 1))
			;;
		*)
			forge_die 69 "msb reports $2 in an unknown state '$forge_msb_status'; refusing to guess"
			;;
		esac
	done

	# The cache disk is formatted root-owned; the agent must be able to use it.
	if ! "$forge_msb" exec --quiet "$2" --no-tty -- sudo -n sh -c \
		'chown agent:agent /opt/forge/.cache && chmod 0777 /opt/forge/.cache' </dev/null >&2; then
		forge_die 69 "could not prepare the cache disk of $2"
	fi
	# A reboot only for an adopted sandbox: a new one has just booted.
	forge_sandbox_restart=
	[ "$forge_su_mode" != restart ] || [ -z "$forge_msb_status" ] || forge_sandbox_restart=1
	forge_sandbox_secrets_converge "$2"
	if [ -n "$forge_sandbox_secrets_pending" ] && [ "$forge_msb_status" = Running ]; then
		forge_warn "new secrets ($forge_sandbox_secrets_pending) are bound to $2 from its next start; to reboot it now run: forge-sandbox up --restart (this ends every session and process in it, dockerd included)"
	fi
	return 0
}

# forge_sandbox_create ROOT NAME [replace]: creates sandbox NAME from the
# plan, after checking that the image is in msb's cache (internal to
# forge_sandbox_up). "already exists" is retried once with --replace. With
# "replace", it replaces an existing sandbox at once (msb create --replace),
# which keeps the named volumes; a configured disk size that differs from
# an existing volume's is refused first (65), since msb would remove the
# sandbox and then fail.
forge_sandbox_create() {
	forge_sc_root=$1 forge_sc_name=$2
	forge_msb_image_cached "$forge_sandbox_image" ||
		forge_die 69 "image $forge_sandbox_image is not in msb's image cache; build it with: forge-sandbox build-image --tag $forge_sandbox_image"
	forge_sc_replace=
	if [ "${3:-}" = replace ]; then
		forge_sandbox_volume_sizes_check "$forge_sc_name"
		forge_sc_replace=1
		forge_say "recreating $forge_sc_name from $forge_sandbox_image (msb create --replace; the cache and docker volumes are kept)"
	else
		forge_say "creating $forge_sc_name from $forge_sandbox_image"
	fi
	forge_sandbox_register "$forge_sc_name" "$forge_sc_root"
	forge_sandbox_record_create "$forge_sc_root" "$forge_sc_name"
	# News once, when the mounts are decided; plan and adoption stay quiet.
	[ -z "$forge_mounts_project_held" ] ||
		forge_warn "sandbox.mountProjectReadonly: the project $forge_mounts_project_held is not mounted: it holds the read-write $forge_mounts_project_holds, and msb cannot mount a folder read-only around a read-write one; its history is there through git (see forge-sandbox(1))"
	while :; do
		set --
		forge_sc_rest=$forge_sandbox_plan
		forge_sc_first=1
		while [ -n "$forge_sc_rest" ]; do
			forge_sc_line=${forge_sc_rest%%'
'*}
			forge_sc_rest=${forge_sc_rest#*'
'}
			# The plan starts with "msb": the program is the one found.
			[ -z "$forge_sc_first" ] && set -- "$@" "$forge_sc_line"
			forge_sc_first=
		done
		[ -z "$forge_sc_replace" ] || set -- "$@" --replace
		forge_sc_status=0
		forge_sc_err=$("$forge_msb" "$@" 2>&1 </dev/null >/dev/null) || forge_sc_status=$?
		[ -z "$forge_sc_err" ] || printf '%s\n' "$forge_sc_err" | forge_printable_lines >&2
		[ "$forge_sc_status" -ne 0 ] || return 0
		case $forge_sc_err in
		*'already exists'*)
			if [ -z "$forge_sc_replace" ]; then
				forge_say "$forge_sc_name already exists to msb; replacing it"
				forge_sc_replace=1
				continue
			fi
			;;
		esac
		[ "$forge_sc_status" -ne 2 ] || forge_die 70 "msb rejected the create arguments (see forge-sandbox plan)"
		forge_die 69 "msb could not create $forge_sc_name (exit $forge_sc_status)"
	done
}

# forge_sandbox_volume_sizes_check NAME: exits 65 when one of NAME's named
# volumes exists with another size than the plan gives it (a volume keeps
# the size it was made with). Exits 69 when msb's answer is not a list of
# volumes.
forge_sandbox_volume_sizes_check() {
	local json have key name
	forge_sandbox_volumes "$1"
	json=$("$forge_msb" volume ls --format json </dev/null) ||
		forge_die 69 "msb volume ls failed"
	for key in docker cache; do
		name=$forge_sandbox_cache_volume
		[ "$key" != docker ] || name=$forge_sandbox_docker_volume
		# shellcheck disable=SC2016 # a jq program, not shell
		have=$(printf '%s' "$json" | jq -rs --arg n "$name" --arg k "$key" --argjson plan "$forge_plan" '
			if length == 1 and (.[0] | type) == "array" then
			  $plan.disks[$k] as $mib
			  | (first(.[0][] | select(type == "object" and .name == $n) | .capacity_bytes) // "none" | tostring) as $have
			  | if $have == "none" or $have == "null" or $have == ($mib * 1048576 | tostring) then "ok"
			    else "\($have)\t" + ($mib | if . % 1024 == 0 then "\(. / 1024)g" else "\(.)m" end) end
			else error("bad") end' 2>/dev/null) ||
			forge_die 69 "msb volume ls --format json did not print a JSON array of volumes; refusing to guess"
		[ "$have" = ok ] ||
			forge_die 65 "configuration key sandbox.resources.${key}Disk: ${have#*'	'}, but the volume $name keeps the size it was made with (${have%%'	'*} bytes) across --recreate; set it back, or drop the volumes with forge-sandbox rm, then up"
	done
}

# forge_sandbox_secrets_converge NAME [ENV@HOSTS...]: makes the secrets bound
# to sandbox NAME the configured ones (forge_sandbox_secrets, or the
# arguments): msb modify --secret for every configured one (refreshing its
# value), --secret-rm for bound ones no longer configured. A new name takes
# effect at the sandbox's next start (--next-start), or at once when
# forge_sandbox_restart is 1 (--restart, a reboot: only when the user asked
# for it); forge_sandbox_secrets_pending is set to the names left for the
# next start. With forge_sandbox_restart 1 the sandbox is rebooted even when
# nothing else changes. Nothing runs when nothing is bound or configured and
# no restart is asked for.
forge_sandbox_secrets_converge() {
	forge_scv_name=$1
	forge_sandbox_secrets_pending=
	shift
	if [ "$#" -eq 0 ]; then
		forge_scv_rest=$forge_sandbox_secrets
		while [ -n "$forge_scv_rest" ]; do
			set -- "$@" "${forge_scv_rest%%'
'*}"
			forge_scv_rest=${forge_scv_rest#*'
'}
		done
	fi
	forge_msb_bound_secrets "$forge_scv_name"
	[ "$#" -gt 0 ] || [ -n "$forge_msb_bound" ] || [ -n "${forge_sandbox_restart:-}" ] || return 0
	forge_scv_conf='
'
	forge_scv_new=
	for forge_scv_s in "$@"; do
		forge_scv_env=${forge_scv_s%@*}
		forge_scv_conf=$forge_scv_conf$forge_scv_env'
'
		case $forge_msb_bound in
		*"
$forge_scv_env
"*) ;;
		*) forge_scv_new=$forge_scv_new${forge_scv_new:+ }$forge_scv_env ;;
		esac
		set -- "$@" --secret "$forge_scv_s"
		shift
	done
	forge_scv_rest=${forge_msb_bound#?}
	while [ -n "$forge_scv_rest" ]; do
		forge_scv_env=${forge_scv_rest%%'
'*}
		forge_scv_rest=${forge_scv_rest#*'
'}
		case $forge_scv_conf in
		*"
$forge_scv_env
"*) ;;
		*) set -- "$@" --secret-rm "$forge_scv_env" ;;
		esac
	done
	if [ -n "${forge_sandbox_restart:-}" ]; then
		set -- "$@" --restart
	elif [ -n "$forge_scv_new" ]; then
		set -- "$@" --next-start
		forge_sandbox_secrets_pending=$forge_scv_new
	fi
	"$forge_msb" modify "$forge_scv_name" "$@" </dev/null >/dev/null ||
		forge_die 69 "could not update the secrets of $forge_scv_name"
}

# --- rm and prune ------------------------------------------------------------------

# forge_sandbox_remove NAME: removes sandbox NAME, then its two named
# volumes; a missing sandbox or volume is not an error. When the sandbox
# cannot be removed, the volumes are left alone. Returns 1 on a failure.
forge_sandbox_remove() {
	forge_msb_rm "$1" || return 1
	forge_sandbox_volumes "$1"
	forge_sr_ok=0
	forge_msb_volume_rm "$forge_sandbox_docker_volume" || forge_sr_ok=1
	forge_msb_volume_rm "$forge_sandbox_cache_volume" || forge_sr_ok=1
	[ "$forge_sr_ok" = 0 ] || return 1
	forge_sandbox_unregister "$1"
}

# forge_sandbox_prune [KEEP...]: removes every forge-* sandbox (and its
# volumes) whose recorded worktree no longer exists, except the KEEP names.
# A sandbox without a record (or whose record does not give its name) is
# left alone with a warning. Prints each removed name. Returns 1 when a
# removal failed.
forge_sandbox_prune() {
	forge_msb_forge_names
	forge_sandbox_registry x
	forge_pr_names=$forge_msb_names
	# Registry entries of sandboxes already gone: their volumes may remain.
	for forge_pr_file in "$forge_sandbox_registry_dir"/forge-*; do
		[ -f "$forge_pr_file" ] || continue
		forge_pr_name=${forge_pr_file##*/}
		case $forge_pr_name in *.lock | *.break) continue ;; esac
		case $forge_pr_names in *"
$forge_pr_name
"* | "$forge_pr_name
"*) ;;
		*) forge_pr_names=$forge_pr_names$forge_pr_name'
' ;;
		esac
	done
	forge_pr_failed=0
	forge_pr_rest=$forge_pr_names
	while [ -n "$forge_pr_rest" ]; do
		forge_pr_name=${forge_pr_rest%%'
'*}
		forge_pr_rest=${forge_pr_rest#*'
'}
		forge_pr_keep=
		for forge_pr_k in "$@"; do
			[ "$forge_pr_k" != "$forge_pr_name" ] || forge_pr_keep=1
		done
		[ -z "$forge_pr_keep" ] || continue
		forge_sandbox_registry "$forge_pr_name"
		forge_pr_path=
		[ ! -f "$forge_sandbox_registry_file" ] ||
			forge_pr_path=$(forge_state get "$forge_sandbox_registry_file" worktree '' 2>/dev/null) || forge_pr_path=
		if [ -z "$forge_pr_path" ]; then
			forge_warn "$forge_pr_name: no record of its worktree; left alone (remove it with msb rm)"
			continue
		fi
		[ ! -d "$forge_pr_path" ] || continue
		forge_sandbox_name_of "$forge_pr_path"
		if [ "$forge_sandbox_name" != "$forge_pr_name" ]; then
			forge_warn "$forge_pr_name: its record names $forge_pr_path, which gives another name; left alone"
			continue
		fi
		if forge_sandbox_remove "$forge_pr_name"; then
			printf '%s\n' "$forge_pr_name"
		else
			forge_pr_failed=1
		fi
	done
	return "$forge_pr_failed"
}

# --- either backend ------------------------------------------------------------------

# forge_sandbox_prepare ROOT NAME [create]: the plan of sandbox NAME for the
# worktree at ROOT on forge_backend (forge_sandbox_backend first), and its
# rendering by that backend: forge_sandbox_plan (msb) or forge_bwrap_plan.
# With "create", what up needs on disk is made.
forge_sandbox_prepare() {
	forge_plan "$1" "$2" "$forge_backend" "${3:-}"
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

# forge_sandbox_lock NAME: takes the lock on bringing up sandbox NAME, the
# folder ${XDG_STATE_HOME:-$HOME/.local/state}/forge/sandboxes/NAME.up made
# with mkdir (atomic) and owned by this process (its "owner" file: PID and
# start time). Not a flock: msb's or the sandbox's processes would inherit
# the descriptor and hold it. A lock whose owner is gone (a killed run), or
# still without an owner 10 seconds after it was made (a run killed while
# taking it), is broken (forge_sandbox_lock_break) and taken anew.
# Waits up to FORGE_SANDBOX_WAIT (30) seconds, then exits 75.
forge_sandbox_lock() {
	forge_sandbox_registry "$1"
	forge_sl_dir=$forge_sandbox_registry_dir/$1.up
	forge_sl_wait=${FORGE_SANDBOX_WAIT:-30}
	forge_is_uint "$forge_sl_wait" ||
		forge_die 64 "FORGE_SANDBOX_WAIT must be a whole number of seconds, not '$forge_sl_wait'"
	mkdir -p -- "$forge_sandbox_registry_dir" 2>/dev/null ||
		forge_die 73 "cannot create $forge_sandbox_registry_dir"
	forge_sl_tries=0 forge_sl_gone=0
	until mkdir -m 700 -- "$forge_sl_dir" 2>/dev/null; do
		if [ -L "$forge_sl_dir" ] || { [ -e "$forge_sl_dir" ] && [ ! -d "$forge_sl_dir" ]; }; then
			forge_die 73 "$forge_sl_dir is not a folder; refusing to use it as a lock"
		fi
		if [ ! -e "$forge_sl_dir" ]; then
			# Released between the mkdir and the look: try again at once. A
			# mkdir that keeps failing with nothing there is an error of its
			# own (a folder removed, no permission), said with mkdir's words.
			forge_sl_gone=$((forge_sl_gone + 1))
			[ "$forge_sl_gone" -lt 3 ] && continue
			mkdir -m 700 -- "$forge_sl_dir" && break
			[ -e "$forge_sl_dir" ] || forge_die 73 "cannot create the lock $forge_sl_dir"
			continue
		fi
		if forge_sandbox_lock_stale "$forge_sl_dir"; then
			forge_sandbox_lock_break "$forge_sl_dir" ||
				forge_die 75 "cannot break the stale lock $forge_sl_dir"
			continue
		fi
		[ "$forge_sl_tries" -lt "$((forge_sl_wait * 10))" ] ||
			forge_die 75 "$1 is being brought up by another process (lock $forge_sl_dir); try again later"
		[ "$forge_sl_tries" != 0 ] || forge_say "waiting for another process bringing up $1"
		sleep 0.1
		forge_sl_tries=$((forge_sl_tries + 1))
	done
	# Written whole, then renamed: an owner file is never seen half written.
	{ forge_owner >"$forge_sl_dir/owner.$$" && mv -f -- "$forge_sl_dir/owner.$$" "$forge_sl_dir/owner"; } ||
		forge_die 73 "cannot write $forge_sl_dir/owner"
}

# forge_sandbox_lock_stale DIR: true when the lock folder DIR is abandoned:
# its owner file names a process that is gone, or it has none 10 seconds
# after it was made (its maker writes one at once).
forge_sandbox_lock_stale() {
	if [ -f "$1/owner" ]; then
		! forge_owner_alive "$1/owner"
		return
	fi
	forge_sls_made=$(stat -c %Y -- "$1" 2>/dev/null) || return 1
	[ "$(date +%s)" -gt "$((forge_sls_made + 10))" ]
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
	forge_sandbox_registry "$1"
	forge_sul_dir=$forge_sandbox_registry_dir/$1.up
	[ -d "$forge_sul_dir" ] && [ ! -L "$forge_sul_dir" ] || return 0
	forge_sul_me=$(forge_owner)
	forge_read_file "$forge_sul_dir/owner" 2>/dev/null || return 0
	[ "$forge_file" = "$forge_sul_me" ] || return 0
	rm -rf -- "$forge_sul_dir"
}
