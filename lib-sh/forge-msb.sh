# forge-msb.sh — the msb backend (SPEC 4.1): finding and calling the
# microsandbox CLI msb and reading its JSON answers (msb ls / images /
# inspect --format json) with jq, an answer that is not what msb documents
# refused, never guessed at; the sandbox's lifecycle (up, create, secrets,
# rm); and its renderer, the create argv from the plan (forge-plan.jq).
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh
# shellcheck disable=SC3043 # local: dash, bash and busybox ash all have it

# forge_msb_find: sets forge_msb to the msb program: $FORGE_MSB when set
# (an absolute path), else msb on PATH by forge_find_program, forge-shell's
# rule. Returns 1 when there is none (or it is not executable).
forge_msb_find() {
	if [ -n "${FORGE_MSB:-}" ]; then
		forge_msb=$FORGE_MSB
		case $forge_msb in /*) ;; *) return 1 ;; esac
		# An explicit status: a bare return in an EXIT trap gives bash's
		# exit status, not this test's.
		[ -f "$forge_msb" ] && [ -x "$forge_msb" ] && return 0
		return 1
	fi
	forge_find_program msb || return 1
	forge_msb=$forge_program
}

# forge_msb_require: forge_msb_find, or exit 69 with the install hint.
forge_msb_require() {
	forge_msb_find && return 0
	forge_msb_missing
	exit 69
}

# forge_msb_missing: reports that msb cannot be found, with how to install it.
forge_msb_missing() {
	if [ -n "${FORGE_MSB:-}" ]; then
		case $FORGE_MSB in
		/*) forge_error "msb not found: FORGE_MSB=$FORGE_MSB is not an executable file" ;;
		*) forge_error "msb not found: FORGE_MSB=$FORGE_MSB is not an absolute path" ;;
		esac
	else
		forge_error "msb not found on PATH (and FORGE_MSB is not set)"
	fi
	forge_say "install it with: npm install @superradcompany/microsandbox-linux-x64-gnu@0.6.18"
	forge_say "then set FORGE_MSB=\$PWD/node_modules/@superradcompany/microsandbox-linux-x64-gnu/bin/msb (or put msb on PATH)"
}

# forge_msb_doctor: runs "msb doctor" bounded by FORGE_SANDBOX_DOCTOR_TIMEOUT
# (30) seconds and sets forge_msb_doctor to available (exit 0), missing (no
# msb), indeterminate (no answer in time) or unsupported (any other exit),
# and forge_msb_doctor_said to msb's explanation: its "error:" lines with
# their hints and its failed checks.
forge_msb_doctor() {
	forge_msb_doctor_said=
	forge_msb_doctor_secs=${FORGE_SANDBOX_DOCTOR_TIMEOUT:-30}
	forge_is_uint "$forge_msb_doctor_secs" ||
		forge_die 64 "FORGE_SANDBOX_DOCTOR_TIMEOUT must be a whole number of seconds, not '$forge_msb_doctor_secs'"
	if ! forge_msb_find; then
		forge_msb_doctor=missing
		return 0
	fi
	forge_helper_path forge-timeout
	forge_msb_doctor_rc=0
	forge_msb_doctor_out=$("$forge_helper" -k 2 "$forge_msb_doctor_secs" "$forge_msb" doctor </dev/null 2>&1) ||
		forge_msb_doctor_rc=$?
	case $forge_msb_doctor_rc in
	0) forge_msb_doctor=available ;;
	124) forge_msb_doctor=indeterminate ;;
	126 | 127) forge_msb_doctor=missing ;;
	*)
		forge_msb_doctor=unsupported
		forge_msb_doctor_said=$(printf '%s\n' "$forge_msb_doctor_out" | awk '
			/^error:/ { shown = 1; print; next }
			shown && /^[ \t]/ { print; next }
			{ shown = 0 }
			/\342\234\227/ { print }')
		[ -n "$forge_msb_doctor_said" ] ||
			forge_msb_doctor_said=$(printf '%s\n' "$forge_msb_doctor_out" | tail -n 10)
		;;
	esac
}

# forge_msb_doctor_report: reports a doctor outcome other than available on
# stderr (after forge_msb_doctor).
forge_msb_doctor_report() {
	case $forge_msb_doctor in
	missing) forge_msb_missing ;;
	indeterminate)
		forge_error "msb doctor gave no answer within ${forge_msb_doctor_secs}s: whether this host can run microVMs is indeterminate"
		;;
	unsupported)
		forge_error "host unsupported: msb cannot run microVMs here (msb doctor exited $forge_msb_doctor_rc):"
		printf '%s\n' "$forge_msb_doctor_said" | forge_printable_lines '    ' >&2
		forge_say "run 'msb doctor --fix' to apply the fixes msb supports, then try again"
		;;
	esac
}

# forge_msb_status NAME: sets forge_msb_status to sandbox NAME's status from
# "msb ls --format json" (empty when there is no such sandbox). Exits 69
# when msb fails or answers anything but an array of sandboxes.
forge_msb_status() {
	forge_msb_ls
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_msb_status=$(printf '%s' "$forge_msb_ls_json" |
		jq -r --arg n "$1" 'first(.[] | select(.name == $n) | .status) // ""') ||
		forge_die 70 "jq failed while reading msb ls"
}

# forge_msb_ls: sets forge_msb_ls_json to the output of
# "msb ls --format json", checked to be an array of {name, status} objects.
forge_msb_ls() {
	forge_msb_ls_json=$("$forge_msb" ls --format json </dev/null) ||
		forge_die 69 "msb ls failed"
	# Slurped: exactly one document, or it is refused.
	printf '%s' "$forge_msb_ls_json" | jq -se 'length == 1 and (.[0] | type == "array" and
		all(.[]; type == "object" and (.name | type) == "string" and (.status | type) == "string"))' \
		>/dev/null 2>&1 ||
		forge_die 69 "msb ls --format json did not print a JSON array of sandboxes; refusing to guess"
}

# forge_msb_forge_names: sets forge_msb_names to the forge-* sandboxes msb
# knows, "NAME" one per line, and forge_msb_ls_json (see forge_msb_ls).
forge_msb_forge_names() {
	forge_msb_ls
	forge_msb_names=$(printf '%s' "$forge_msb_ls_json" |
		jq -r '.[] | select(.name | startswith("forge-")) | .name') ||
		forge_die 70 "jq failed while reading msb ls"
	[ -z "$forge_msb_names" ] || forge_msb_names=$forge_msb_names'
'
}

# forge_msb_image_cached REF: true when msb's image cache holds REF
# ("msb images --format json"; references compared with Docker's defaults
# filled in: docker.io/library/ and :latest). Exits 69 when msb fails or
# answers anything but an array of images.
forge_msb_image_cached() {
	forge_msb_images=$("$forge_msb" images --format json </dev/null) ||
		forge_die 69 "msb images failed"
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_msb_cached=$(printf '%s' "$forge_msb_images" | jq -rs --arg r "$1" '
		def norm: (if test("^[^/]+[.:][^/]*/") or startswith("localhost/") then . else
		             (if test("/") then "docker.io/" + . else "docker.io/library/" + . end) end)
		          | if test("@") or test(":[^/]*$") then . else . + ":latest" end;
		if length == 1 and (.[0] | type == "array" and all(.[]; type == "object" and (.reference | type) == "string"))
		then (if any(.[0][]; (.reference | norm) == ($r | norm)) then "yes" else "no" end)
		else "bad" end') || forge_msb_cached=bad
	case $forge_msb_cached in
	yes) return 0 ;;
	no) return 1 ;;
	esac
	forge_die 69 "msb images --format json did not print a JSON array of images; refusing to guess"
}

# forge_msb_bound_secrets NAME: sets forge_msb_bound to the env names of the
# secrets bound to sandbox NAME ("msb inspect NAME --format json",
# config.network.secrets.secrets[].env_var): empty when none, else a newline
# before and after each. Exits 69 when msb fails or its answer is not that.
forge_msb_bound_secrets() {
	forge_msb_inspect=$("$forge_msb" inspect "$1" --format json </dev/null) ||
		forge_die 69 "msb inspect $1 failed"
	forge_msb_bound=$(printf '%s' "$forge_msb_inspect" | jq -rs '
		if length == 1 and (.[0] | type) == "object" then
		  (.[0].config.network.secrets.secrets // [])
		  | if type == "array" then .[] | .env_var | select(type == "string") else error("bad") end
		else error("bad") end' 2>/dev/null) ||
		forge_die 69 "msb inspect $1 --format json did not print a sandbox's configuration; refusing to guess"
	[ -z "$forge_msb_bound" ] || forge_msb_bound='
'$forge_msb_bound'
'
}

# forge_msb_rm NAME: "msb rm --force NAME --quiet"; a missing sandbox is not
# an error (forge_msb_absent is then 1, else empty). Returns 1 (msb's
# message shown) when it fails. (--quiet silences msb's "sandbox not
# found", so a failure is checked against msb ls.)
forge_msb_rm() {
	forge_msb_absent=
	forge_msb_err=$("$forge_msb" rm --force "$1" --quiet </dev/null 2>&1 >/dev/null) && return 0
	forge_msb_absent=1
	case $forge_msb_err in
	*'sandbox not found'*) return 0 ;;
	esac
	forge_msb_status "$1"
	[ -n "$forge_msb_status" ] || return 0
	forge_msb_absent=
	[ -z "$forge_msb_err" ] || printf '%s\n' "$forge_msb_err" | forge_printable_lines >&2
	forge_error "could not remove sandbox $1; its volumes are left alone"
	return 1
}

# forge_msb_volume_rm NAME: "msb volume rm NAME --quiet"; a missing volume is
# not an error (checked against msb volume ls; forge_msb_absent is then 1,
# else empty). Returns 1 (msb's message shown) when it fails.
forge_msb_volume_rm() {
	forge_msb_absent=
	forge_msb_err=$("$forge_msb" volume rm "$1" --quiet </dev/null 2>&1 >/dev/null) && return 0
	forge_msb_absent=1
	case $forge_msb_err in
	*'volume not found'*) return 0 ;;
	esac
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_msb_vol=$("$forge_msb" volume ls --format json </dev/null 2>/dev/null |
		jq -rs --arg n "$1" 'if length == 1 and (.[0] | type) == "array"
			then (if any(.[0][]; .name? == $n) then "present" else "absent" end) else "bad" end' 2>/dev/null) ||
		forge_msb_vol=bad
	[ "$forge_msb_vol" != absent ] || return 0
	forge_msb_absent=
	[ -z "$forge_msb_err" ] || printf '%s\n' "$forge_msb_err" | forge_printable_lines >&2
	forge_error "could not remove volume $1"
	return 1
}

# --- the msb sandbox's lifecycle: up, create, secrets, rm ---------------------------

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
	forge_sandbox_restart=
	[ "$mode" != restart ] || [ -z "$forge_msb_status" ] || forge_sandbox_restart=1
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
	local conf env name new rest s
	name=$1
	forge_sandbox_secrets_pending=
	shift
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
	[ "$#" -gt 0 ] || [ -n "$forge_msb_bound" ] || [ -n "${forge_sandbox_restart:-}" ] || return 0
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
	if [ -n "${forge_sandbox_restart:-}" ]; then
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

# --- msb's rendering of the plan ------------------------------------------------------

# forge_msb_render PLAN: msb's rendering of the plan PLAN (forge_plan's
# JSON; forge-plan.jq's msb_argv): sets forge_sandbox_plan to the msb create
# argv, one argument a line, "msb" first (no argument can hold a newline:
# msb's paths cannot, and the rest is validated).
forge_msb_render() {
	# Made with the view of the plan just built (forge_plan_view).
	if [ "$1" = "${forge_plan_viewed:-}" ] && [ -n "${forge_plan_msb_argv:-}" ]; then
		forge_sandbox_plan=$forge_plan_msb_argv
		return 0
	fi
	forge_sandbox_plan=$(printf '%s' "$1" | forge_plan_jq msb) ||
		forge_die 70 "jq failed while rendering the msb plan"
	forge_sandbox_plan=$forge_sandbox_plan'
'
}
