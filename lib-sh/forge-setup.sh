# forge-setup.sh — dependencies and build caches of an isolated copy (SPEC
# 3.5): verify.isolated.{setup,keep,setupKey}, configured or detected, and the
# setup steps, run in the copy by the step runner (forge-steps.sh) and, in a
# warm slot, only when their key files changed.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_isolated_settings ROOT: sets forge_isolated_setup (a JSON array of
# steps), forge_isolated_keep and forge_isolated_key (newline-separated
# paths) from verify.isolated.{setup,keep,setupKey} in the merged
# configuration, each key that is not set there from detection at ROOT. A
# configured setup without a setupKey has no key. Needs forge_config.
forge_isolated_settings() {
	local out sep
	forge_isolated_detect "$1"
	if [ "${forge_config_files:-1}" = 0 ]; then
		# No configuration file: detection alone, without jq.
		forge_isolated_setup=$forge_detect_setup
		forge_isolated_keep=$forge_detect_keep_list
		forge_isolated_key=$forge_detect_key_list
		return 0
	fi
	out=$(printf '%s' "$forge_config" | jq -r --argjson ds "$forge_detect_setup" \
		--argjson dk "$forge_detect_keep" --argjson dkey "$forge_detect_key" '
		(.verify.isolated // {}) as $i
		| (if $i | has("setup") then [$i.setup, ($i.setupKey // [])]
		   else [$ds, ($i.setupKey // $dkey)] end) as [$setup, $key]
		| ($i.keep // $dk) as $keep
		| ([$setup | to_entries[] | select((.value.run | type) != "string" or .value.run == "") | .key]
		   | first // null) as $bad
		| if $bad != null then "E\tverify.isolated.setup[\($bad)].run: a non-empty shell command is required"
		  else "\($setup | tojson)", "K\($keep | join("\n"))", "\u0001\($key | join("\n"))" end') ||
		forge_die 70 "jq failed while reading verify.isolated"
	case $out in
	"E	"*) forge_die 65 "configuration: key ${out#??}" ;;
	esac
	forge_isolated_setup=${out%%"
"*}
	out=${out#*"
K"}
	sep=$(printf '\001')
	forge_isolated_keep=${out%%"
$sep"*}
	forge_isolated_key=${out#*"$sep"}
}

# forge_isolated_stamp COPY: prints a digest of the setup steps, the keep
# paths and the content of every key file in COPY (a key that is missing or
# not a regular file counts as such; a symbolic link or a FIFO is never read).
forge_isolated_stamp() {
	{
		printf '%s\n' "$forge_isolated_setup" "$forge_isolated_keep"
		forge_list=$forge_isolated_key
		while forge_list_next; do
			printf 'key %s\n' "$forge_item"
			if forge_is_real_file "$1/$forge_item"; then
				sha256sum <"$1/$forge_item"
			else
				echo missing
			fi
		done
	} | sha256sum
}

# forge_isolated_setup_run COPY [STATE]: runs the setup steps in COPY before
# the verify steps, logged like steps (setup-<n>-<name>.log). With STATE (a
# warm slot's folder), only when the stamp (forge_isolated_stamp) differs
# from that of the slot's last successful setup or a keep path that setup
# left is gone. A failing setup step exits 69 (an ERROR, not a FAIL).
forge_isolated_setup_run() {
	local n stamp
	[ "$forge_isolated_setup" != '[]' ] || return 0
	forge_require_tool sha256sum
	stamp=$(forge_isolated_stamp "$1") || forge_die 70 "cannot digest the setup keys"
	if [ -n "${2:-}" ] && forge_isolated_setup_current "$1" "$2/setup" "$stamp"; then
		[ "${forge_quiet:-0}" = 1 ] ||
			printf 'Setup: up to date in this warm slot (%s unchanged)\n' \
				"$(printf '%s' "${forge_isolated_key:-the setup}" | forge_printable)" >&2
		return 0
	fi
	[ -z "${2:-}" ] || rm -f -- "$2/setup"
	forge_exec_dir=$1
	# One jq run for all the setup steps; each run and reported by the step
	# runner, as a verify step is (forge_step).
	forge_steps_queue "$forge_isolated_setup" "$forge_default_timeout" verify.isolated.setup
	n=0
	while forge_step_next; do
		n=$((n + 1))
		forge_step Setup "$n" "$forge_step_file" "$forge_step_name" "$forge_step_run" \
			"$forge_step_timeout" sh -c -- "$forge_step_run"
		[ "$forge_step_exit" = 0 ] ||
			forge_die 69 "setup step '$forge_step_name' failed ($forge_step_result): log .forge/runs/$forge_run_id/setup-$n-$forge_step_file.log"
	done
	[ -n "${2:-}" ] || return 0
	# The stamp, then the keep paths that setup left (their loss means
	# setting up again).
	forge_rm_tree "$2/setup.$$" || forge_die 73 "cannot remove $2/setup.$$"
	{
		printf '%s\n' "$stamp"
		forge_list=$forge_isolated_keep
		while forge_list_next; do
			[ ! -d "$1/$forge_item" ] || printf '%s\n' "$forge_item"
		done
	} >"$2/setup.$$" || forge_die 73 "cannot write $2/setup.$$"
	mv -f -- "$2/setup.$$" "$2/setup" || forge_die 73 "cannot write $2/setup"
}

# forge_isolated_setup_current COPY FILE STAMP: true when FILE records
# STAMP, the current stamp, and every keep path it lists is still a folder in
# COPY.
forge_isolated_setup_current() {
	local keep stamp
	forge_is_real_file "$2" || return 1
	{
		IFS= read -r stamp || return 1
		[ "$stamp" = "$3" ] || return 1
		while IFS= read -r keep; do
			forge_is_real_dir "$1/$keep" || return 1
		done
	} <"$2"
}
