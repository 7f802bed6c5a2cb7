# forge-plan.sh — the sandbox plan (SPEC 4.1-4.3): one backend-neutral JSON
# value, built by one jq program (forge-plan.jq) from the merged
# configuration, the mount plan (forge-mounts.sh) and forge-netrule's
# answers. Each backend renders it: msb by forge-plan.jq's msb_argv,
# bwrap by forge_bwrap_render. Its schema is in forge(7).
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_plan_jq STAGE [JQ-ARG...]: runs forge-plan.jq's stage_STAGE (STAGE
# is forge's own word, never data) on standard input; prints its output.
forge_plan_jq() {
	local stage
	stage=$1
	shift
	jq -r "$@" -L "$(forge_libsh_dir)" "include \"forge-plan\"; stage_$stage"
}

# forge_plan_netrule [--secret-hosts] [ENTRY...]: prints forge-netrule's
# JSON answer for the ENTRYs (none are newline), or "null" when there are
# none. Its warnings are the plan's (forge-plan.jq), not its own.
forge_plan_netrule() {
	local hosts
	hosts=
	[ "${1:-}" != --secret-hosts ] || { hosts=1; shift; }
	if [ "$#" -eq 0 ]; then
		printf 'null\n'
		return 0
	fi
	forge_helper_path forge-netrule
	if [ -n "$hosts" ]; then
		"$forge_helper" --json --secret-hosts -- "$@" 2>/dev/null
	else
		"$forge_helper" --json -- "$@" 2>/dev/null
	fi || forge_die 70 "forge-netrule failed"
}

# forge_plan_netrule_tagged TAG ENTRIES [--secret-hosts]: forge_plan_netrule
# of the entries tagged TAG in ENTRIES (jq's "entries" output: a line "TAG
# <tab> ENTRY" each).
forge_plan_netrule_tagged() {
	local tag entries line
	tag=$1 entries=$2
	shift 2
	while IFS= read -r line; do
		case $line in "$tag	"*) set -- "$@" "${line#"$tag	"}" ;; esac
	done <<EOF
$entries
EOF
	forge_plan_netrule "$@"
}

# forge_plan ROOT NAME BACKEND [create [SOURCE STORES]]: builds the plan of
# sandbox NAME for the worktree at ROOT (canonical) on BACKEND (msb or bwrap)
# from the merged configuration (forge_config_load first), warning on stderr
# about what it leaves out. With "create", what up needs on disk is made
# (forge_mounts_plan); SOURCE and STORES: ROOT is an isolated copy of the
# worktree SOURCE borrowing the object stores STORES (forge_mounts_plan).
# Exits 65 on a configuration no backend can be given, 73 on a plan that
# would let the sandbox write forge's own state. Sets forge_sandbox_cfg, the
# keys the mount plan reads (forge-plan.jq's mount_config). Result: forge_plan, the
# plan, one line of JSON (forge(7)), and its shell view (forge_plan_view).
# The mount plan's results stay set too (forge_mounts,
# forge_mounts_project_held).
forge_plan() {
	local root name backend create source stores allow hosts names out line code view
	root=$1 name=$2 backend=$3 create=${4:-} source=${5:-} stores=${6:-}
	# The names set on the host: one awk for all (a name with a newline,
	# or anything no configured name can be, is left out).
	names=$(awk 'BEGIN { for (k in ENVIRON) if (k ~ /^[A-Za-z_][A-Za-z0-9_]*$/) print k; exit 0 }') ||
		forge_die 70 "awk failed while reading the environment"
	# What forge-netrule is asked: the allow entries, then every secret host
	# (no jq run when the configuration cannot hold any: neither key is in
	# its text, and no \u escape could spell one).
	case $forge_config in
	*'"allow"'* | *'"secrets"'* | *'\u'*)
		out=$(printf '%s' "$forge_config" | forge_plan_jq entries) ||
			forge_die 70 "jq failed while reading the sandbox configuration"
		;;
	*) out= ;;
	esac
	allow=$(forge_plan_netrule_tagged A "$out")
	hosts=$(forge_plan_netrule_tagged H "$out" --secret-hosts)
	out=$(printf '%s' "$forge_config" | forge_plan_jq plan --arg name "$name" --arg backend "$backend" \
		--arg envset "$names" --argjson allow "$allow" --argjson shosts "$hosts") ||
		forge_die 70 "jq failed while building the sandbox plan"
	forge_plan='' forge_sandbox_cfg=
	while IFS= read -r line; do
		case $line in
		'C	'*) forge_sandbox_cfg=$forge_sandbox_cfg${line#C	}'
' ;;
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

	forge_mounts_plan "$root" "$backend" "$create" "$source" "$stores"
	forge_mounts_state_check "$root" "$name"
	out=$(printf '%s' "$forge_plan" | forge_plan_jq finish --arg mounts "$forge_mounts" \
		--arg why "$forge_mounts_why" --arg project "${forge_mounts_project_held:-}") ||
		forge_die 70 "jq failed while building the sandbox plan"
	forge_plan=${out%%'
'*}
	forge_plan=${forge_plan#P	}
	view=${out#*'
'}
	forge_plan_view "$forge_plan" "$view"
	# The secrets whose host variable is unset (the view's "unset" lines),
	# said now, before any msb call: msb itself fails on them at create or
	# exec; the namespace backend's proxy reads them once, when the sandbox
	# starts.
	while IFS= read -r line; do
		case $line in 'unset	'*) line=${line#*'	'} ;; *) continue ;; esac
		[ -n "$line" ] || continue
		if [ "$backend" = bwrap ]; then
			forge_warn "secret $line: the host variable $line is not set; commands in the sandbox run, but its requests to the secret's hosts carry the placeholder \$MSB_$line instead of a value (the proxy reads $line when the sandbox starts): export it, then forge-sandbox up --restart"
		else
			forge_warn "secret $line: the host variable $line is not set; export it in the environment that starts the harness (and forge-sandbox), or every command in the sandbox fails (msb refuses to start or exec a sandbox whose secret's variable is unset)"
		fi
	done <<EOF
$view
EOF
	return 0
}

# forge_plan_view PLAN [VIEW]: sets the shell's view of the plan PLAN
# (forge_plan's JSON; forge-plan.jq's view, or VIEW when it was made with
# the plan): no value of a plan holds a newline.
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
#   forge_plan_msb_argv    for an msb plan, msb's rendering (forge_msb_render)
forge_plan_view() {
	local out line
	# Once per plan: a renderer asks again for the plan just built.
	[ "$1" != "${forge_plan_viewed:-}" ] || return 0
	forge_plan_viewed=$1
	if [ "$#" -ge 2 ]; then
		out=$2
	else
		out=$(printf '%s' "$1" | forge_plan_jq view) ||
			forge_die 70 "jq failed while reading the sandbox plan"
	fi
	forge_sandbox_egress_hosts='' forge_sandbox_secrets='' forge_sandbox_env='' forge_plan_mounts='' forge_plan_msb_argv=
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
		'mount	'*) forge_plan_mounts=$forge_plan_mounts${line#*'	'}'
' ;;
		'argv	'*) forge_plan_msb_argv=$forge_plan_msb_argv${line#*'	'}'
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
	out=$(forge_plan_jq size -n --arg v "$1" --arg key "$2") ||
		forge_die 70 "jq failed while reading a size"
	case $out in
	'S	'*) forge_size=${out#S	} ;;
	*) out=${out#D	}; forge_die "${out%%'	'*}" "${out#*'	'}" ;;
	esac
}
