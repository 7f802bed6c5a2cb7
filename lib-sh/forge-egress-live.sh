# forge-egress-live.sh — live egress of a namespace sandbox (SPEC 4.8):
# forge-sandbox log, allow and deny. forge-egress (the proxy, host side)
# makes every decision; this file finds the sandbox, reads its decision log
# (STATEDIR/egress.log, one JSON object a line, rotated to egress.log.1) and
# sends live allow/deny entries to the proxy's control socket
# STATEDIR/egress.ctl (owner-only, in the state folder, which no sandbox
# sees: only STATEDIR/net is mounted inside). The proxy records the live
# entries in STATEDIR/egress-grants.jsonl; they end with the proxy (rm, up
# --recreate or --restart).
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh

# forge_live_split_dir ARG...: the optional DIR of log/allow/deny: the first
# operand when it contains a '/'. Sets forge_live_dir ('' for none) and
# forge_live_shift (1 when it was taken, else 0).
forge_live_split_dir() {
	forge_live_dir='' forge_live_shift=0
	case ${1-} in
	-*) ;;
	*/*) forge_live_dir=$1 forge_live_shift=1 ;;
	esac
}

# forge_live_find DIR WHAT: sets forge_live_name and forge_live_state for the
# sandbox of the worktree containing DIR; WHAT (log, allow, deny) says what
# is asked for. A sandbox that is not a namespace one (msb fixes its rules
# at create) is 69 naming up --recreate.
forge_live_find() {
	if ! forge_sandbox_locate "$1"; then
		[ -d "${1:-.}" ] || forge_die 69 "no such directory: $1"
		forge_die 69 "not a git repository: $(CDPATH='' cd -- "${1:-.}" && pwd -P)"
	fi
	forge_live_name=$forge_sandbox_name forge_live_root=$forge_sandbox_root
	if ! forge_bwrap_exists "$forge_live_name"; then
		case $2 in
		log) forge_die 69 "$forge_live_name is not a namespace sandbox: forge-sandbox log reads the decisions of forge's own proxy, which only the namespace backend has (msb applies its rules itself)" ;;
		*) forge_die 69 "$forge_live_name is not a namespace sandbox: msb fixes the egress rules when it creates a sandbox, so they cannot change live; change sandbox.network.allow and run: forge-sandbox up --recreate" ;;
		esac
	fi
	forge_live_state=$forge_bwrap_dir
}

# forge_live_proxy WHAT: checks that the sandbox found runs with forge's
# proxy (64 in open mode, which has none; 69 when it is not running).
forge_live_proxy() {
	forge_bwrap_running "$forge_live_name" ||
		forge_die 69 "$forge_live_name is not running: start it with forge-sandbox up"
	if [ -S "$forge_live_state/egress.ctl" ] && [ ! -L "$forge_live_state/egress.ctl" ]; then
		return 0
	fi
	if [ -f "$forge_live_state/slirp.pid" ]; then
		forge_usage_error "$1: $forge_live_name has open egress (no allow-list): there is no proxy whose list could change, every public host is reachable already"
	fi
	forge_die 69 "$forge_live_name has no live control for its proxy (started by an older forge?): forge-sandbox up --restart"
}

# forge_live_duration TEXT: sets forge_live_seconds from N[s|m|h] (64 when
# it is anything else, zero, or more than a year).
forge_live_duration() {
	forge_ld_n=${1%[smh]}
	case $1 in *s) forge_ld_unit=1 ;; *m) forge_ld_unit=60 ;; *h) forge_ld_unit=3600 ;; *) forge_ld_unit=1 ;; esac
	case $forge_ld_n in
	'' | *[!0-9]*) forge_usage_error "allow: --for needs N[s|m|h] (e.g. 30s, 10m, 2h), not '$1'" ;;
	esac
	# Leading zeros are no octal, and a long number no overflow.
	forge_ld_n=$(printf '%s' "$forge_ld_n" | sed 's/^0*//')
	if [ -z "$forge_ld_n" ] || [ "${#forge_ld_n}" -gt 8 ]; then
		forge_usage_error "allow: --for must be more than 0 and at most a year, not '$1'"
	fi
	forge_live_seconds=$((forge_ld_n * forge_ld_unit))
	[ "$forge_live_seconds" -le 31536000 ] ||
		forge_usage_error "allow: --for must be at most a year, not '$1'"
}

# forge_live_change allow|deny ARG...: forge-sandbox allow/deny.
forge_live_change() {
	forge_lc_verb=$1
	shift
	forge_live_split_dir "$@"
	[ "$forge_live_shift" = 0 ] || shift
	forge_lc_for='' forge_lc_timed='' forge_lc_n=$#
	# Leaves only the HOSTs in "$@".
	while [ "$forge_lc_n" -gt 0 ]; do
		forge_lc_arg=$1
		shift
		forge_lc_n=$((forge_lc_n - 1))
		case $forge_lc_arg in
		-h | --help) forge_help "$0"; exit 0 ;;
		--for | --for=*)
			[ "$forge_lc_verb" = allow ] || forge_usage_error "deny: unknown option '$forge_lc_arg' (a deny lasts as long as the sandbox)"
			forge_lc_timed=1
			if [ "$forge_lc_arg" = --for ]; then
				[ "$forge_lc_n" -gt 0 ] || forge_usage_error "allow: --for needs a DURATION (N[s|m|h])"
				forge_lc_for=$1
				shift
				forge_lc_n=$((forge_lc_n - 1))
			else
				forge_lc_for=${forge_lc_arg#--for=}
			fi
			;;
		--)
			while [ "$forge_lc_n" -gt 0 ]; do
				set -- "$@" "$1"
				shift
				forge_lc_n=$((forge_lc_n - 1))
			done
			;;
		-?*) forge_usage_error "$forge_lc_verb: unknown option '$forge_lc_arg'" ;;
		*) set -- "$@" "$forge_lc_arg" ;;
		esac
	done
	[ "$#" -gt 0 ] || forge_usage_error "$forge_lc_verb: no HOST given (forge-sandbox $forge_lc_verb [DIR] HOST...)"
	forge_live_seconds=0
	[ -z "$forge_lc_timed" ] || forge_live_duration "$forge_lc_for"
	forge_live_find "$forge_live_dir" "$forge_lc_verb"
	forge_live_proxy "$forge_lc_verb"
	forge_helper_path forge-egress
	# forge-egress checks every HOST as configuration is checked (65 naming
	# the first refused, nothing sent) and returns once the proxy applied
	# them all, and open connections the change refuses were closed.
	forge_lc_rc=0
	"$forge_helper" --send "$forge_live_state" "$forge_lc_verb" "$forge_live_seconds" "$@" || forge_lc_rc=$?
	[ "$forge_lc_rc" -eq 0 ] || exit "$forge_lc_rc"
	if [ "$forge_lc_verb" = allow ] && [ -n "$forge_lc_timed" ]; then
		forge_say "$forge_live_name: allowed $* for $forge_lc_for"
	elif [ "$forge_lc_verb" = allow ]; then
		forge_say "$forge_live_name: allowed $* (until the sandbox is recreated or removed)"
	else
		forge_say "$forge_live_name: denied $* (open connections to it closed)"
	fi
}

# forge_live_log ARG...: forge-sandbox log [DIR] [--denied] [--json] [--follow].
forge_live_log() {
	forge_live_split_dir "$@"
	[ "$forge_live_shift" = 0 ] || shift
	forge_ll_denied=0 forge_ll_json=0 forge_ll_follow=0
	for forge_ll_arg in "$@"; do
		case $forge_ll_arg in
		-h | --help) forge_help "$0"; exit 0 ;;
		--denied) forge_ll_denied=1 ;;
		--json) forge_ll_json=1 ;;
		--follow | -f) forge_ll_follow=1 ;;
		*) forge_usage_error "log: unexpected argument '$forge_ll_arg' (a DIR contains a '/')" ;;
		esac
	done
	forge_require_tool jq
	forge_live_find "$forge_live_dir" log
	forge_ll_log=$forge_live_state/egress.log
	if [ ! -e "$forge_ll_log" ] && [ ! -e "$forge_ll_log.1" ] && [ -f "$forge_live_state/slirp.pid" ]; then
		forge_say "$forge_live_name has open egress (no allow-list): no proxy decides, so nothing is logged"
	fi
	for forge_ll_f in "$forge_ll_log" "$forge_ll_log.1"; do
		if [ -L "$forge_ll_f" ] || { [ -e "$forge_ll_f" ] && [ ! -f "$forge_ll_f" ]; }; then
			forge_die 73 "$forge_ll_f is not a regular file; refusing to read it"
		fi
	done
	# The jq program that prints one decision as a human line (control
	# bytes shown as '?').
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_ll_line='"\(.ts)  \(.decision)  \(.method // "-") \(.host // "-"):\(.port // "-")  \(.address // "-")  \(.rule)" + (if .decision == "allow" then "  (\(.bytes) bytes)" else "" end) | gsub("[[:cntrl:]]"; "?")'
	# A line that is not JSON (cut by a crash) is skipped, never fatal.
	# shellcheck disable=SC2016 # a jq program, not shell
	set -- -R --unbuffered --argjson denied "$forge_ll_denied" --argjson json "$forge_ll_json" \
		'fromjson? // empty | objects | select($denied == 0 or .decision == "deny")
		 | if $json == 1 then tojson else '"$forge_ll_line"' end'
	{
		[ ! -f "$forge_ll_log.1" ] || cat -- "$forge_ll_log.1"
		if [ "$forge_ll_follow" = 1 ]; then
			exec tail -n +1 -F -- "$forge_ll_log" 2>/dev/null
		fi
		[ ! -f "$forge_ll_log" ] || cat -- "$forge_ll_log"
	} | jq -r "$@"
}

# forge_live_grants NAME: prints NAME's live entries in effect as one JSON
# array ([] when none, or when it does not run with forge's proxy).
forge_live_grants() {
	forge_bwrap_state "$1"
	forge_lg_file=$forge_bwrap_dir/egress-grants.jsonl
	if ! forge_bwrap_running "$1" || [ ! -S "$forge_bwrap_dir/egress.ctl" ] || [ -L "$forge_lg_file" ] ||
		[ ! -f "$forge_lg_file" ]; then
		printf '[]\n'
		return 0
	fi
	jq -c -R -n '[inputs | fromjson? // empty | objects
		| select(.until == null or ((.until | fromdateiso8601? // 0) > now))]' <"$forge_lg_file" ||
		printf '[]\n'
}

# forge_live_ls_json: adds "grants" (forge_live_grants) to every sandbox of
# forge_bwrap_ls_json (after forge_bwrap_list).
forge_live_ls_json() {
	forge_ll_map='{}'
	forge_ll_rest=$forge_bwrap_names
	while [ -n "$forge_ll_rest" ]; do
		forge_ll_name=${forge_ll_rest%%'
'*}
		forge_ll_rest=${forge_ll_rest#*'
'}
		forge_ll_map=$(jq -cn --argjson m "$forge_ll_map" --arg n "$forge_ll_name" \
			--argjson g "$(forge_live_grants "$forge_ll_name")" '$m + {($n): $g}') ||
			forge_die 70 "jq failed while reading the live grants of $forge_ll_name"
	done
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_bwrap_ls_json=$(printf '%s' "$forge_bwrap_ls_json" |
		jq -c --argjson m "$forge_ll_map" 'map(. + {grants: ($m[.name] // [])})') ||
		forge_die 70 "jq failed while listing the live grants"
}

# forge_live_drift NAME: up adopting NAME warns about live entries in
# effect: they are not in the configuration, and end when it is recreated.
forge_live_drift() {
	forge_ld_list=$(forge_live_grants "$1" | jq -r '.[] | "\(.decision) \(.host)" + (if .until then " (until \(.until))" else "" end) | gsub("[[:cntrl:]]"; "?")') ||
		return 0
	[ -n "$forge_ld_list" ] || return 0
	forge_warn "$1 has live egress changes that are not in the configuration (forge-sandbox allow/deny); they end with forge-sandbox up --recreate or rm:"
	printf '%s\n' "$forge_ld_list" | while IFS= read -r forge_ld_line; do
		forge_warn "  $forge_ld_line"
	done
}
