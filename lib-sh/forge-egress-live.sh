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
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_live_find DIR WHAT: sets forge_live_name and forge_live_state for the
# sandbox of the worktree containing DIR; WHAT (log, allow, deny) says what
# is asked for. A sandbox that is not a namespace one (msb fixes its rules
# at create) is 69 naming up --recreate.
forge_live_find() {
	if ! forge_sandbox_locate "$1"; then
		[ -d "${1:-.}" ] || forge_die 69 "no such directory: $1"
		forge_die 69 "not a git repository: $(CDPATH='' cd -- "${1:-.}" && pwd -P)"
	fi
	forge_live_name=$forge_sandbox_name
	if ! forge_bwrap_exists "$forge_live_name"; then
		case $2 in
		log) forge_die 69 "$forge_live_name is not a namespace sandbox: forge-sandbox log reads the decisions of forge's own proxy, which only the namespace backend has (msb applies its rules itself)" ;;
		*) forge_die 69 "$forge_live_name is not a namespace sandbox: msb fixes the egress rules when it creates a sandbox, so they cannot change live; change sandbox.network.allow and run: forge-sandbox up --recreate" ;;
		esac
	fi
	forge_live_state=$forge_bwrap_dir
}

# forge_live_proxy NAME STATEDIR WHAT: checks that the namespace sandbox
# NAME, whose state folder is STATEDIR, runs with forge's proxy (64 in open
# mode, which has none; 69 when it is not running).
forge_live_proxy() {
	forge_bwrap_running "$1" ||
		forge_die 69 "$1 is not running: start it with forge-sandbox up"
	if [ -S "$2/egress.ctl" ] && [ ! -L "$2/egress.ctl" ]; then
		return 0
	fi
	if [ -f "$2/slirp.pid" ]; then
		forge_usage_error "$3: $1 has open egress (no allow-list): there is no proxy whose list could change, every public host is reachable already"
	fi
	forge_die 69 "$1 has no live control for its proxy (started by an older forge?): forge-sandbox up --restart"
}

# forge_live_duration TEXT: prints the seconds of N[s|m|h] (64 when it is
# anything else, zero, or more than a year).
forge_live_duration() {
	local num unit
	num=${1%[smh]}
	case $1 in *s) unit=1 ;; *m) unit=60 ;; *h) unit=3600 ;; *) unit=1 ;; esac
	case $num in
	'' | *[!0-9]*) forge_usage_error "allow: --for needs N[s|m|h] (e.g. 30s, 10m, 2h), not '$1'" ;;
	esac
	# Leading zeros are no octal, and a long number no overflow.
	num=$(printf '%s' "$num" | sed 's/^0*//')
	if [ -z "$num" ] || [ "${#num}" -gt 8 ]; then
		forge_usage_error "allow: --for must be more than 0 and at most a year, not '$1'"
	fi
	[ "$((num * unit))" -le 31536000 ] ||
		forge_usage_error "allow: --for must be at most a year, not '$1'"
	printf '%s\n' "$((num * unit))"
}

# forge_live_is_dir ARG: true when ARG, the first operand, is the optional
# DIR: it contains a '/' and is not an option.
forge_live_is_dir() {
	case $1 in
	-*) return 1 ;;
	*/*) return 0 ;;
	esac
	return 1
}

# forge_live_change allow|deny ARG...: forge-sandbox allow/deny.
forge_live_change() {
	local verb dir dur timed n arg rc secs
	verb=$1
	shift
	dir=
	if forge_live_is_dir "${1-}"; then
		dir=$1
		shift
	fi
	dur='' timed='' n=$#
	# Leaves only the HOSTs in "$@".
	while [ "$n" -gt 0 ]; do
		arg=$1
		shift
		n=$((n - 1))
		case $arg in
		-h | --help) forge_help "$0"; exit 0 ;;
		--for | --for=*)
			[ "$verb" = allow ] || forge_usage_error "deny: unknown option '$arg' (a deny lasts as long as the sandbox)"
			timed=1
			if [ "$arg" = --for ]; then
				[ "$n" -gt 0 ] || forge_usage_error "allow: --for needs a DURATION (N[s|m|h])"
				dur=$1
				shift
				n=$((n - 1))
			else
				dur=${arg#--for=}
			fi
			;;
		--)
			while [ "$n" -gt 0 ]; do
				set -- "$@" "$1"
				shift
				n=$((n - 1))
			done
			;;
		-?*) forge_usage_error "$verb: unknown option '$arg'" ;;
		*) set -- "$@" "$arg" ;;
		esac
	done
	[ "$#" -gt 0 ] || forge_usage_error "$verb: no HOST given (forge-sandbox $verb [DIR] HOST...)"
	secs=0
	[ -z "$timed" ] || secs=$(forge_live_duration "$dur") || exit
	forge_live_find "$dir" "$verb"
	forge_live_proxy "$forge_live_name" "$forge_live_state" "$verb"
	forge_helper_path forge-egress
	# forge-egress checks every HOST as configuration is checked (65 naming
	# the first refused, nothing sent) and returns once the proxy applied
	# them all, and open connections the change refuses were closed.
	rc=0
	"$forge_helper" --send "$forge_live_state" "$verb" "$secs" "$@" || rc=$?
	[ "$rc" -eq 0 ] || exit "$rc"
	if [ "$verb" = allow ] && [ -n "$timed" ]; then
		forge_say "$forge_live_name: allowed $* for $dur"
	elif [ "$verb" = allow ]; then
		forge_say "$forge_live_name: allowed $* (until the sandbox is recreated or removed)"
	else
		forge_say "$forge_live_name: denied $* (open connections to it closed)"
	fi
}

# forge_live_log ARG...: forge-sandbox log [DIR] [--denied] [--json] [--follow].
forge_live_log() {
	local denied json follow arg dir log file human
	dir=
	if forge_live_is_dir "${1-}"; then
		dir=$1
		shift
	fi
	denied=0 json=0 follow=0
	for arg in "$@"; do
		case $arg in
		-h | --help) forge_help "$0"; exit 0 ;;
		--denied) denied=1 ;;
		--json) json=1 ;;
		--follow | -f) follow=1 ;;
		*) forge_usage_error "log: unexpected argument '$arg' (a DIR contains a '/')" ;;
		esac
	done
	forge_require_tool jq
	forge_live_find "$dir" log
	log=$forge_live_state/egress.log
	if [ ! -e "$log" ] && [ ! -e "$log.1" ] && [ -f "$forge_live_state/slirp.pid" ]; then
		forge_say "$forge_live_name has open egress (no allow-list): no proxy decides, so nothing is logged"
	fi
	for file in "$log" "$log.1"; do
		if [ -L "$file" ] || { [ -e "$file" ] && [ ! -f "$file" ]; }; then
			forge_die 73 "$file is not a regular file; refusing to read it"
		fi
	done
	# The jq program that prints one decision as a human line (control
	# bytes shown as '?').
	human='"\(.ts)  \(.decision)  \(.method // "-") \(.host // "-"):\(.port // "-")  \(.address // "-")  \(.rule)" + (if .decision == "allow" then "  (\(.bytes) bytes)" else "" end) | gsub("[[:cntrl:]]"; "?")'
	# The log through jq: a line that is not JSON (cut by a crash) is
	# skipped, never fatal.
	{
		[ ! -f "$log.1" ] || cat -- "$log.1"
		if [ "$follow" = 1 ]; then
			exec tail -n +1 -F -- "$log" 2>/dev/null
		fi
		[ ! -f "$log" ] || cat -- "$log"
	} | jq -r -R --unbuffered --argjson denied "$denied" --argjson json "$json" \
		'fromjson? // empty | objects | select($denied == 0 or .decision == "deny")
		 | if $json == 1 then tojson else '"$human"' end'
}

# forge_live_grants NAME: prints NAME's live entries in effect as one JSON
# array ([] when none, or when it does not run with forge's proxy).
forge_live_grants() {
	local file
	forge_bwrap_state "$1"
	file=$forge_bwrap_dir/egress-grants.jsonl
	if ! forge_bwrap_running "$1" || [ ! -S "$forge_bwrap_dir/egress.ctl" ] || [ -L "$file" ] ||
		[ ! -f "$file" ]; then
		printf '[]\n'
		return 0
	fi
	jq -c -R -n '[inputs | fromjson? // empty | objects
		| select(.until == null or ((.until | fromdateiso8601? // 0) > now))]' <"$file" ||
		printf '[]\n'
}

# forge_live_ls_json: adds "grants" (forge_live_grants) to every sandbox of
# forge_bwrap_ls_json (after forge_bwrap_list).
forge_live_ls_json() {
	local map rest name
	map='{}'
	rest=$forge_bwrap_names
	while [ -n "$rest" ]; do
		name=${rest%%'
'*}
		rest=${rest#*'
'}
		map=$(jq -cn --argjson m "$map" --arg n "$name" \
			--argjson g "$(forge_live_grants "$name")" '$m + {($n): $g}') ||
			forge_die 70 "jq failed while reading the live grants of $name"
	done
	forge_bwrap_ls_json=$(printf '%s' "$forge_bwrap_ls_json" |
		jq -c --argjson m "$map" 'map(. + {grants: ($m[.name] // [])})') ||
		forge_die 70 "jq failed while listing the live grants"
}

# forge_live_drift NAME: up adopting NAME warns about live entries in
# effect: they are not in the configuration, and end when it is recreated.
forge_live_drift() {
	local list line
	list=$(forge_live_grants "$1" | jq -r '.[] | "\(.decision) \(.host)" + (if .until then " (until \(.until))" else "" end) | gsub("[[:cntrl:]]"; "?")') ||
		return 0
	[ -n "$list" ] || return 0
	forge_warn "$1 has live egress changes that are not in the configuration (forge-sandbox allow/deny); they end with forge-sandbox up --recreate or rm:"
	printf '%s\n' "$list" | while IFS= read -r line; do
		forge_warn "  $line"
	done
}
