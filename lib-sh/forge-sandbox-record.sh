# forge-sandbox-record.sh — what a sandbox was created with, recorded in
# its worktree's .forge/sandbox/NAME (egress, image, resources, env names,
# secret names), and the drift of the configuration from it (SPEC 4.1).
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

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
	local env_list secret_list
	forge_clock
	env_list=$(forge_sandbox_spaced "$forge_sandbox_env")
	secret_list=$(forge_sandbox_spaced "$forge_sandbox_secrets")
	if forge_exclude_forge_dir "$1" && forge_sandbox_record_safe "$1" "$2" create &&
		forge_state set "$forge_sandbox_record" "egress=$forge_sandbox_egress" \
			"image=$forge_sandbox_image" "resources=$forge_sandbox_resources" \
			"env=$env_list" "secrets=$secret_list" "created=$forge_ts"; then
		return 0
	fi
	forge_warn "cannot record what $2 is created with in $1/.forge/sandbox/$2${forge_state_refusal:+: $forge_state_refusal}"
}

# forge_sandbox_record_remove ROOT NAME: removes sandbox NAME's record.
forge_sandbox_record_remove() {
	forge_sandbox_record_safe "$1" "$2" || return 0
	rm -f -- "$forge_sandbox_record" "$forge_sandbox_record.lock"
}

# forge_sandbox_spaced LIST: prints LIST, one of the plan's lists of env
# names or secrets (forge_sandbox_env, forge_sandbox_secrets: one a line), on
# one line, space-separated (no name or host holds a space), as the record
# keeps it.
forge_sandbox_spaced() {
	local line
	line=$(printf '%s' "$1" | tr '\n' ' ') || return
	printf '%s\n' "${line% }"
}

# forge_sandbox_drift_check ROOT NAME [BACKEND]: warns when the configured
# egress flags, image, resources, env names or (namespace backend, BACKEND
# bwrap) secrets differ from those sandbox NAME was created with (all fixed
# at create time), with how to apply them. (msb's secrets are converged at
# every up: forge_sandbox_secrets_converge.) Keys a record lacks (an older
# forge wrote it) are not compared.
forge_sandbox_drift_check() {
	local disk env_list key keys said secret_list was old new
	forge_sandbox_record_safe "$1" "$2" && [ -f "$forge_sandbox_record" ] || return 0
	was=$(forge_state dump "$forge_sandbox_record" 2>/dev/null) || return 0
	said='' disk=
	env_list=$(forge_sandbox_spaced "$forge_sandbox_env")
	secret_list=$(forge_sandbox_spaced "$forge_sandbox_secrets")
	keys='egress image resources env'
	[ "${3:-msb}" != bwrap ] || keys="$keys secrets"
	for key in $keys; do
		case $was in
		"$key="* | *"
$key="*) ;;
		*) continue ;;
		esac
		old=$(forge_state get "$forge_sandbox_record" "$key" '' 2>/dev/null) || continue
		case $key in
		egress) new=$forge_sandbox_egress ;;
		image) new=$forge_sandbox_image ;;
		resources) new=$forge_sandbox_resources ;;
		env) new=$env_list ;;
		secrets) new=$secret_list ;;
		esac
		[ "$old" != "$new" ] || continue
		if [ -z "$said" ]; then
			forge_warn "$2 differs from the configuration in what is fixed when a sandbox is created (recorded in $forge_sandbox_record); recreate it with: forge-sandbox up --recreate (keeps the cache and docker volumes)"
			said=1
		fi
		forge_warn "  $key: created with: ${old:-(none)}"
		forge_warn "  $key: configured:   ${new:-(none)}"
		if [ "$key" = resources ] &&
			[ "${old#* * }" != "${new#* * }" ]; then
			disk=1
		fi
	done
	[ -z "$disk" ] ||
		forge_warn "  a disk keeps the size its volume was made with: a new dockerDisk or cacheDisk needs forge-sandbox rm (which drops the volumes), then up"
	return 0
}
