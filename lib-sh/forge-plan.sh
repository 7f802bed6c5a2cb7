# forge-plan.sh — the sandbox plan (SPEC 4.1-4.3): one backend-neutral JSON
# value, built by one jq program (forge-plan.jq) from the merged
# configuration, the mount plan (forge-mounts.sh) and forge-netrule's
# answers. Each backend renders it: msb by forge-plan.jq's msb_argv,
# bwrap by forge_bwrap_render. Its schema is in forge(7).
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh
# shellcheck disable=SC3043 # local: dash, bash and busybox ash all have it

# forge_plan_jq STAGE [JQ-ARG...]: runs forge-plan.jq's STAGE on standard
# input; prints its output.
forge_plan_jq() {
	local stage
	stage=$1
	shift
	jq -r --arg stage "$stage" "$@" -f "$(forge_libsh_dir)/forge-plan.jq"
}

# forge_plan_netrule STAGE [--secret-hosts]: prints forge-netrule's JSON
# answer for the entries forge-plan.jq's STAGE takes from the configuration,
# or "null" when there are none. Its warnings are the plan's, not its own.
forge_plan_netrule() {
	local entries stage
	stage=$1
	shift
	entries=$(printf '%s' "$forge_config" | forge_plan_jq "$stage") ||
		forge_die 70 "jq failed while reading the sandbox configuration"
	if [ -z "$entries" ]; then
		printf 'null\n'
		return 0
	fi
	forge_helper_path forge-netrule
	printf '%s\n' "$entries" | "$forge_helper" --json "$@" 2>/dev/null ||
		forge_die 70 "forge-netrule failed"
}

# forge_plan ROOT NAME BACKEND [create]: builds the plan of sandbox NAME for
# the worktree at ROOT (canonical) on BACKEND (msb or bwrap) from the merged
# configuration (forge_config_load first), warning on stderr about what it
# leaves out. With "create", the scratch dir is created if missing (up).
# Exits 65 on a configuration no backend can be given, 73 on a plan that
# would let the sandbox write forge's own state. Result: forge_plan, the
# plan, one line of JSON (forge(7)), and its shell view (forge_plan_view).
# The mount plan's results stay set too (forge_mounts,
# forge_mounts_project_held).
forge_plan() {
	local allow hosts names out line unset code
	forge_backend=$3
	# The names set on the host: one awk for all (a name with a newline,
	# or anything no configured name can be, is left out).
	# shellcheck disable=SC2016 # an awk program, not shell
	names=$(awk 'BEGIN { for (k in ENVIRON) if (k ~ /^[A-Za-z_][A-Za-z0-9_]*$/) print k; exit 0 }') ||
		forge_die 70 "awk failed while reading the environment"
	allow=$(forge_plan_netrule allow)
	hosts=$(forge_plan_netrule hosts --secret-hosts)
	out=$(printf '%s' "$forge_config" | forge_plan_jq plan --arg name "$2" --arg backend "$3" \
		--arg envset "$names" --argjson allow "$allow" --argjson shosts "$hosts") ||
		forge_die 70 "jq failed while building the sandbox plan"
	forge_plan=
	while IFS= read -r line; do
		case $line in
		'W	'*) forge_warn "${line#W	}" ;;
		'D	'*)
			line=${line#D	}
			code=${line%%'	'*}
			forge_die "$code" "${line#*'	'}"
			;;
		'P	'*) forge_plan=${line#P	} ;;
		esac
	done <<EOF
$out
EOF
	[ -n "$forge_plan" ] || forge_die 70 "jq gave no sandbox plan"

	forge_sandbox_config
	forge_mounts_plan "$1" "${4:-}"
	forge_mounts_state_check "$1" "$2"
	forge_plan=$(printf '%s' "$forge_plan" | forge_plan_jq finish -c --arg mounts "$forge_mounts" \
		--arg why "$forge_mounts_why" --arg project "${forge_mounts_project_held:-}") ||
		forge_die 70 "jq failed while building the sandbox plan"

	forge_plan_view "$forge_plan"
	# Said now, before any msb call: msb itself fails on it at create or exec.
	unset=$forge_plan_unset
	while [ -n "$unset" ]; do
		line=${unset%%'
'*}
		unset=${unset#*'
'}
		forge_warn "secret $line: the host variable $line is not set; export it in the environment that starts the harness (and forge-sandbox), or every command in the sandbox fails"
	done
	return 0
}

# forge_plan_view PLAN: sets the shell's view of the plan PLAN (forge_plan's
# JSON), in one jq run (no value of a plan holds a newline):
#   forge_sandbox_image    its image reference
#   forge_sandbox_cpus, forge_sandbox_memory_mib  the limits
#   forge_sandbox_resources  "cpus=N memory=S dockerDisk=S cacheDisk=S" (msb's
#                          size forms: what the record keeps)
#   forge_sandbox_egress_mode   open, allow or deny
#   forge_sandbox_egress_hosts  the allowed hosts, one a line
#   forge_sandbox_egress   the egress as recorded at create ("" open, else
#                          "--net-default deny[ --net-rule allow@HOST...]")
#   forge_sandbox_secrets  the secrets as ENV@HOST,... one a line
#   forge_sandbox_env      the env names passed in, one a line
#   forge_plan_mounts      the mounts as "rw PATH" / "ro PATH" lines, in order
#   forge_plan_project     the project held read-only around them, or empty
#   forge_plan_unset       the secrets whose host variable is unset, one a line
forge_plan_view() {
	local out line
	# shellcheck disable=SC2016 # a jq program, not shell
	out=$(printf '%s' "$1" | jq -r '
		def size: if . % 1024 == 0 then "\(. / 1024)g" else "\(.)m" end;
		"image\t\(.image)", "cpus\t\(.cpus)", "memory\t\(.memory)",
		"resources\tcpus=\(.cpus) memory=\(.memory | size) dockerDisk=\(.disks.docker | size) cacheDisk=\(.disks.cache | size)",
		"mode\t\(.egress.mode)", "egress\t" + (if .egress.mode == "open" then "" else
		  (["--net-default deny"] + [.egress.hosts[] | "--net-rule allow@\(.)"] | join(" ")) end),
		"project\t\(.project // "")",
		(.egress.hosts[] | "host\t\(.)"), (.secrets[] | "secret\t\(.env)@\(.hosts | join(","))"),
		(.env[] | "env\t\(.)"), (.unset[] | "unset\t\(.)"),
		(.mounts[] | "mount\t" + (if .ro then "ro " else "rw " end) + .path)') ||
		forge_die 70 "jq failed while reading the sandbox plan"
	forge_sandbox_egress_hosts='' forge_sandbox_secrets='' forge_sandbox_env='' forge_plan_unset='' forge_plan_mounts=
	while IFS= read -r line; do
		case $line in
		'image	'*) forge_sandbox_image=${line#*'	'} ;;
		'cpus	'*) forge_sandbox_cpus=${line#*'	'} ;;
		'memory	'*) forge_sandbox_memory_mib=${line#*'	'} ;;
		'resources	'*) forge_sandbox_resources=${line#*'	'} ;;
		'mode	'*) forge_sandbox_egress_mode=${line#*'	'} ;;
		'egress	'*) forge_sandbox_egress=${line#*'	'} ;;
		'project	'*) forge_plan_project=${line#*'	'} ;;
		'host	'*) forge_sandbox_egress_hosts=$forge_sandbox_egress_hosts${line#*'	'}'
' ;;
		'secret	'*) forge_sandbox_secrets=$forge_sandbox_secrets${line#*'	'}'
' ;;
		'env	'*) forge_sandbox_env=$forge_sandbox_env${line#*'	'}'
' ;;
		'unset	'*) forge_plan_unset=$forge_plan_unset${line#*'	'}'
' ;;
		'mount	'*) forge_plan_mounts=$forge_plan_mounts${line#*'	'}'
' ;;
		esac
	done <<EOF
$out
EOF
}

# forge_sandbox_plan ROOT NAME [create]: forge_plan ROOT NAME msb [create],
# the library's name for the msb create argv (forge(7)).
forge_sandbox_plan() {
	forge_plan "$1" "$2" msb "${3:-}"
	forge_msb_render "$forge_plan"
}

# forge_size_mib VALUE KEY: sets forge_size to the configured size VALUE in
# msb's syntax (whole GiB as "<n>g", else whole MiB as "<n>m"), by the
# plan's rule (forge-plan.jq size_mib). Exits 65 naming KEY when VALUE is
# not <number>[k|m|g|t][i][b], is below 1 MiB or is not whole MiB.
forge_size_mib() {
	local out
	out=$(jq -nr --arg v "$1" --arg key "$2" --arg stage size -f "$(forge_libsh_dir)/forge-plan.jq") ||
		forge_die 70 "jq failed while reading a size"
	case $out in
	'S	'*) forge_size=${out#S	} ;;
	*) out=${out#D	}; forge_die "${out%%'	'*}" "${out#*'	'}" ;;
	esac
}
