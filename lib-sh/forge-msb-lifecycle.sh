# forge-msb-lifecycle.sh — the msb sandbox's lifecycle (SPEC 4.1): up
# (adopt or create, then the cache disk, the secrets and drift), create,
# the volume sizes check, the secrets' convergence, and rm. Its calls to msb
# and its renderer are forge-msb.sh's.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

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
	local mode waited
	mode=${3:-}
	forge_msb_require
	forge_msb_doctor
	case $forge_msb_doctor in
	available) ;;
	indeterminate) forge_warn "msb doctor gave no answer within ${forge_msb_doctor_secs}s: host support is indeterminate; going on" ;;
	*) forge_msb_doctor_report; exit 69 ;;
	esac

	forge_sandbox_wait_setting
	waited=0
	while :; do
		forge_msb_status "$2"
		case $forge_msb_status in
		'')
			forge_sandbox_create "$1" "$2"
			break
			;;
		Running | Stopped | Crashed)
			if [ "$mode" = recreate ]; then
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
			if [ "$waited" -ge "$forge_sandbox_wait" ]; then
				forge_die 75 "$2 is still $forge_msb_status after ${forge_sandbox_wait}s; try again later"
			fi
			[ "$waited" -gt 0 ] || forge_say "$2 is $forge_msb_status; waiting up to ${forge_sandbox_wait}s"
			sleep 1
			waited=$((waited + 1))
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
	[ -n "$forge_msb_status" ] || mode=
	forge_sandbox_secrets_converge "$2" "$mode"
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
	local err first line name replace rest root status
	root=$1 name=$2
	forge_msb_image_cached "$forge_sandbox_image" ||
		forge_die 69 "image $forge_sandbox_image is not in msb's image cache; build it with: forge-sandbox build-image --tag $forge_sandbox_image"
	replace=
	if [ "${3:-}" = replace ]; then
		forge_sandbox_volume_sizes_check "$name"
		replace=1
		forge_say "recreating $name from $forge_sandbox_image (msb create --replace; the cache and docker volumes are kept)"
	else
		forge_say "creating $name from $forge_sandbox_image"
	fi
	forge_sandbox_register "$name" "$root"
	forge_sandbox_register_mounts "$name" "$forge_plan_mounts"
	forge_sandbox_record_create "$root" "$name"
	# News once, when the mounts are decided; plan and adoption stay quiet.
	[ -z "$forge_mounts_project_held" ] ||
		forge_warn "sandbox.mountProjectReadonly: the project $forge_mounts_project_held is not mounted: it holds the read-write $forge_mounts_project_holds, and msb cannot mount a folder read-only around a read-write one; its history is there through git (see forge-sandbox(1))"
	while :; do
		set --
		rest=$forge_sandbox_plan
		first=1
		while [ -n "$rest" ]; do
			line=${rest%%'
'*}
			rest=${rest#*'
'}
			# The plan starts with "msb": the program is the one found.
			[ -z "$first" ] && set -- "$@" "$line"
			first=
		done
		[ -z "$replace" ] || set -- "$@" --replace
		status=0
		err=$("$forge_msb" "$@" 2>&1 </dev/null >/dev/null) || status=$?
		[ -z "$err" ] || printf '%s\n' "$err" | forge_printable_lines >&2
		[ "$status" -ne 0 ] || return 0
		case $err in
		*'already exists'*)
			if [ -z "$replace" ]; then
				forge_say "$name already exists to msb; replacing it"
				replace=1
				continue
			fi
			;;
		esac
		[ "$status" -ne 2 ] || forge_die 70 "msb rejected the create arguments (see forge-sandbox plan)"
		forge_die 69 "msb could not create $name (exit $status)"
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

# forge_sandbox_secrets_converge NAME MODE [ENV@HOSTS...]: makes the secrets
# bound to sandbox NAME the configured ones (forge_sandbox_secrets, or the
# ENV@HOSTS): msb modify --secret for every configured one (refreshing its
# value), --secret-rm for bound ones no longer configured. A new name takes
# effect at the sandbox's next start (--next-start), or at once when MODE is
# "restart" (--restart, a reboot: only when the user asked for it; then even
# when nothing else changes); forge_sandbox_secrets_pending is set to the
# names left for the next start. Nothing runs when nothing is bound or
# configured and no restart is asked for.
forge_sandbox_secrets_converge() {
	local conf env mode name new rest s
	name=$1 mode=${2:-}
	forge_sandbox_secrets_pending=
	shift 2
	if [ "$#" -eq 0 ]; then
		rest=$forge_sandbox_secrets
		while [ -n "$rest" ]; do
			set -- "$@" "${rest%%'
'*}"
			rest=${rest#*'
'}
		done
	fi
	forge_msb_bound_secrets "$name"
	[ "$#" -gt 0 ] || [ -n "$forge_msb_bound" ] || [ "$mode" = restart ] || return 0
	conf='
'
	new=
	for s in "$@"; do
		env=${s%@*}
		conf=$conf$env'
'
		case $forge_msb_bound in
		*"
$env
"*) ;;
		*) new=$new${new:+ }$env ;;
		esac
		set -- "$@" --secret "$s"
		shift
	done
	rest=${forge_msb_bound#?}
	while [ -n "$rest" ]; do
		env=${rest%%'
'*}
		rest=${rest#*'
'}
		case $conf in
		*"
$env
"*) ;;
		*) set -- "$@" --secret-rm "$env" ;;
		esac
	done
	if [ "$mode" = restart ]; then
		set -- "$@" --restart
	elif [ -n "$new" ]; then
		set -- "$@" --next-start
		forge_sandbox_secrets_pending=$new
	fi
	"$forge_msb" modify "$name" "$@" </dev/null >/dev/null ||
		forge_die 69 "could not update the secrets of $name"
}

# forge_sandbox_remove NAME: removes sandbox NAME, then its two named
# volumes; a missing sandbox or volume is not an error. When the sandbox
# cannot be removed, the volumes are left alone. Returns 1 on a failure.
# Sets forge_sandbox_removed to what was there to remove: "sandbox",
# "volumes" (the sandbox was gone, a volume was left) or empty (nothing).
forge_sandbox_remove() {
	local ok
	forge_sandbox_removed=
	forge_msb_rm "$1" || return 1
	[ -n "$forge_msb_absent" ] || forge_sandbox_removed=sandbox
	forge_sandbox_volumes "$1"
	ok=0
	forge_msb_volume_rm "$forge_sandbox_docker_volume" || ok=1
	[ -n "$forge_msb_absent" ] || forge_sandbox_removed=${forge_sandbox_removed:-volumes}
	forge_msb_volume_rm "$forge_sandbox_cache_volume" || ok=1
	[ -n "$forge_msb_absent" ] || forge_sandbox_removed=${forge_sandbox_removed:-volumes}
	[ "$ok" = 0 ] || return 1
	forge_sandbox_unregister "$1"
}
