# forge-record.sh — the record of a verification: its timeline event, its
# change report, and what retention keeps (SPEC 3.2, 3.3). The shell writes
# the event itself when every value in it is plain text, as in an agent
# loop's runs (no process is started for it); jq writes it otherwise. Both
# give the same line, byte for byte: t/record.bats holds them to it.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_record VERDICT ISOLATED CHANGE HEAD TREE SANDBOX TESTED KEY ARGC
# [NAME RUN EXIT MS REASON]... [ARG...]: records a verification: updates the
# breaker (forge_breaker_update must know forge_threshold), appends the
# timeline event, writes the change report, then prunes old runs. Sets
# forge_record_json to the event. SANDBOX is the record's "sandbox" value
# (JSON; null when empty), TESTED its "tested" (true, false or null, the
# default), KEY, when not empty, the reuse key it adds as "key"; the last
# ARGC values (default 0) are the exact argv of the first step (a --
# COMMAND), recorded as its "argv" (null for every other step). What
# retention keeps (forge_runs_prune) is read with the event.
forge_record() {
	local argc change head isolated key sandbox sources tested tree verdict
	verdict=$1 isolated=$2 change=$3 head=$4 tree=$5
	sandbox=${6:-null} tested=${7:-null} key=$8 argc=${9:-0}
	shift 9
	forge_breaker_update "$verdict" "$forge_threshold"
	forge_is_count "$argc" || forge_die 70 "forge_record: ARGC is not a count"
	case $tested in
	true | false | null) ;;
	*) forge_die 70 "forge_record: TESTED is not true, false or null" ;;
	esac
	# Retention's inputs, read before this record is appended: the finished
	# runs first, then the records (see forge_runs_prune).
	forge_runs_finished
	sources=0
	[ -z "$forge_runs_finished" ] || sources=1
	forge_record_sh "$sources" "$sandbox" "$tested" "$key" "$argc" "$verdict" "$isolated" "$change" "$head" "$tree" "$@" ||
		forge_record_jq "$sources" "$sandbox" "$tested" "$key" "$argc" "$verdict" "$isolated" "$change" "$head" "$tree" "$@"
	forge_timeline_append "$forge_record_json"
	[ -z "$change" ] || forge_change_write "$change"
	case $forge_runs_kept in
	*"
?unknown
"*)
		# Retention could not read what it keeps: nothing is pruned.
		forge_runs_kept='' ;;
	*) forge_runs_prune found ;;
	esac
}

# forge_record_jq SOURCES SANDBOX TESTED KEY ARGC VERDICT ...: forge_record's
# event by jq, for any values (SANDBOX, TESTED, KEY and ARGC as forge_record
# takes them): sets forge_record_json to it and forge_runs_kept to what
# retention keeps (read with it when SOURCES is 1). VERDICT and the values
# after it go to jq on its standard input, NUL-separated, never as
# arguments: any of them may start with "-" or be longer than an argument
# can be.
forge_record_jq() {
	local argc key out sandbox sources tested
	sources=$1 sandbox=${2:-null} tested=${3:-null} key=$4 argc=${5:-0}
	shift 5
	# The "." after the last NUL keeps a final empty value (jq 1.6's split
	# drops a trailing empty string); what retention reads follows it.
	out=$({
		printf '%s\0' "$@" && printf . &&
			if [ "$sources" = 1 ]; then
				forge_runs_kept_sources "$((forge_keep_runs - 1))" "$3" || printf '\n\001unknown\n'
			fi
	} | jq -R -s -r \
		--arg ts "$forge_ts" --arg run "$forge_run_id" \
		--argjson streak "$forge_streak" --arg breaker "$forge_breaker" \
		--argjson sandbox "$sandbox" --arg key "$key" \
		--argjson argc "$argc" --argjson tested "$tested" \
		--argjson n "$#" \
		'def nullable: if . == "" then null else . end;
		 split("\u0000") as $all | $all[:$n] as $a
		 | ($all[$n:] | join("\u0000") | .[1:]) as $kept
		 | ($a[5:$n - $argc] | [range(0; length; 5) as $i | .[$i:$i + 5]
		   | {name: .[0], run: .[1], argv: null, exit: (.[2] | tonumber), ms: (.[3] | tonumber),
		      reason: (.[4] | nullable),
		      log: ".forge/runs/\($run)/\($i / 5 + 1)-\(.[0] | gsub("[^A-Za-z0-9._-]"; "_")).log"}]
		   | if $argc > 0 and length > 0 then .[0].argv = $a[$n - $argc:] else . end) as $steps
		 | ({ts: $ts, event: "verify", run: $run, verdict: $a[0], isolated: ($a[1] | fromjson), sandbox: $sandbox,
		    change: ($a[2] | nullable), head: ($a[3] | nullable), tree: ($a[4] | nullable), tested: $tested,
		    reused: null, steps: $steps, streak: $streak, breaker: $breaker}
		   + (if $key == "" then {} else {key: $key} end) | tojson),
		   (if $kept | contains("\n\u0001unknown\n") then "?unknown"
		    else $kept | split("\n")[] | fromjson? | objects | .run, (.reused | objects | .run) | strings end)') ||
		forge_die 70 "jq failed while recording the verdict"
	forge_record_split "$out"
}

# forge_record_sh SOURCES SANDBOX TESTED KEY ARGC VERDICT ...: the same as
# forge_record_jq, by the shell alone, when every string is plain
# (forge_json_plain), every number a plain whole number, and SANDBOX is
# null; returns 1 otherwise (or when a record retention reads is not of the
# shape forge writes), having set forge_record_json to nothing new, and
# forge_record_jq does it.
forge_record_sh() {
	local argc argv change head i id isolated k key n reason sources steps tested tree v verdict
	sources=$1 tested=${3:-null} key=$4 argc=${5:-0}
	[ "${2:-null}" = null ] || return 1
	shift 5
	n=$#
	[ "$n" -ge 5 ] && [ "$((n - 5 - argc))" -ge 0 ] && [ "$(((n - 5 - argc) % 5))" -eq 0 ] || return 1
	for v in "$forge_ts" "$forge_run_id" "$forge_breaker" "$key" "$1" "$3" "$4" "$5"; do
		forge_json_plain "$v" || return 1
	done
	forge_json_uint "$forge_streak" || return 1
	case $2 in
	true | false | null) isolated=$2 ;;
	\"*\")
		isolated=${2#\"}
		forge_json_plain "${isolated%\"}" || return 1
		isolated=$2 ;;
	*) return 1 ;;
	esac
	verdict=$1 id=$3 change=null head=null tree=null
	[ -z "$3" ] || change="\"$3\""
	[ -z "$4" ] || head="\"$4\""
	[ -z "$5" ] || tree="\"$5\""
	# The -- COMMAND's argv: the last argc values.
	argv='' k=0
	for v; do
		k=$((k + 1))
		[ "$k" -gt "$((n - argc))" ] || continue
		forge_json_plain "$v" || return 1
		argv="$argv,\"$v\""
	done
	argv="[${argv#,}]"
	[ "$argc" -gt 0 ] || argv=null
	shift 5
	steps='' i=0
	while [ "$#" -gt "$argc" ]; do
		i=$((i + 1))
		forge_json_plain "$1" && forge_json_plain "$2" && forge_json_plain "$5" &&
			forge_json_uint "$3" && forge_json_uint "$4" && forge_record_log_name "$1" || return 1
		reason=null
		[ -z "$5" ] || reason="\"$5\""
		steps="$steps,{\"name\":\"$1\",\"run\":\"$2\",\"argv\":$argv,\"exit\":$3,\"ms\":$4,\"reason\":$reason,\"log\":\".forge/runs/$forge_run_id/$i-$forge_record_log_name.log\"}"
		argv=null
		shift 5
	done
	v="{\"ts\":\"$forge_ts\",\"event\":\"verify\",\"run\":\"$forge_run_id\",\"verdict\":\"$verdict\",\"isolated\":$isolated,\"sandbox\":null,\"change\":$change,\"head\":$head,\"tree\":$tree,\"tested\":$tested,\"reused\":null,\"steps\":[${steps#,}],\"streak\":$forge_streak,\"breaker\":\"$forge_breaker\""
	[ -z "$key" ] || v="$v,\"key\":\"$key\""
	# What retention keeps, when there is anything to prune.
	forge_runs_kept='
'
	if [ "$sources" = 1 ]; then
		if steps=$(forge_runs_kept_sources "$((forge_keep_runs - 1))" "$id"); then
			forge_record_kept "$steps" || return 1
		else
			forge_runs_kept='
?unknown
'
		fi
	fi
	forge_record_json="$v}"
}

# forge_record_kept TEXT: sets forge_runs_kept to the run IDs that the
# records of TEXT (forge_runs_kept_sources) name, one per line between
# newlines, by the shell; returns 1 when a line is not of the shape forge
# writes (then jq reads them). A quote inside a JSON string is escaped (and
# a run ID holds none), so the patterns below match only forge's own keys.
forge_record_kept() {
	local cr='' head ifs="$IFS" kept line noglob='' run
	case $- in *f*) noglob=1 ;; esac
	set -f
	IFS='
'
	# shellcheck disable=SC2086 # split on newlines, on purpose
	set -- $1
	IFS=$ifs
	[ -n "$noglob" ] || set +f
	kept='
'
	for line; do
		# A whole record, one to a line, as jq reads it: a trailing CR is
		# JSON's whitespace; a line cut short (no "breaker" after the steps,
		# no closing "}") or two records run together jq does not read.
		# (Not ${line%"$cr"}: bash and busybox take time quadratic in the
		# length of a line without one.)
		case $line in
		*'"}') ;;
		*)
			[ -n "$cr" ] || cr=$(printf '\r')
			case $line in *"$cr") line=${line%?} ;; esac ;;
		esac
		case $line in
		?*'{"ts":"'*) return 1 ;;
		'{"ts":"'????-??-??T??:??:??Z'","event":"verify","run":"'*',"breaker":"'*'"}') ;;
		*) return 1 ;;
		esac
		run=${line#'{"ts":"'????-??-??T??:??:??Z'","event":"verify","run":"'}
		# An ID with an escape in it (\u0031) is not what jq reads.
		run=${run%%\"*}
		forge_json_plain "$run" || return 1
		kept="$kept$run
"
		# jq reads the last of two keys of one name: a line with a key
		# "run" or "reused" (or "steps") where forge writes none is left to
		# it. Before the steps, "run" is the record's and the reused run's.
		case $line in
		*',"steps":['*',"steps":['* | *',"steps":['*'"reused":'* | *'],"streak":'*'"run":'*) return 1 ;;
		esac
		head=${line%%',"steps":['*}
		case $head in
		*'"run":'*'"run":'*'"run":'*) return 1 ;;
		*',"reused":null')
			case $head in *'"run":'*'"run":'*) return 1 ;; esac ;;
		*',"reused":{"run":"'*'"}')
			# Taken apart only when short (a reused run's record has no
			# steps): the shell's ${line#*...} is quadratic in its length.
			[ "${#line}" -le 4096 ] || return 1
			run=${head#*',"reused":{"run":"'}
			run=${run%%\"*}
			forge_json_plain "$run" || return 1
			kept="$kept$run
" ;;
		*) return 1 ;;
		esac
	done
	forge_runs_kept=$kept
}

# forge_record_log_name NAME: sets forge_record_log_name to a step's NAME as
# its log file's name holds it, every character but [A-Za-z0-9._-] made "_"
# (as forge_record_jq does); returns 1 for a NAME over 256 characters.
forge_record_log_name() {
	local c rest
	case $1 in
	*[!A-Za-z0-9._-]*) ;;
	*) forge_record_log_name=$1; return 0 ;;
	esac
	[ "${#1}" -le 256 ] || return 1
	forge_record_log_name='' rest=$1
	while [ -n "$rest" ]; do
		c=${rest%"${rest#?}"}
		rest=${rest#?}
		case $c in
		[A-Za-z0-9._-]) ;;
		*) c=_ ;;
		esac
		forge_record_log_name=$forge_record_log_name$c
	done
}

# forge_json_plain STRING: true when STRING goes into JSON as it is: a plain
# message (forge_plain_chars: printable ASCII and tab) without a quote, a
# backslash or a tab, which jq's tojson would escape.
forge_json_plain() {
	[ -n "${forge_plain_chars:-}" ] || forge_printable_def
	case $1 in
	*[!"$forge_plain_chars"]* | *'"'* | *\\* | *'	'*) return 1 ;;
	esac
}

# forge_json_uint STRING: true when STRING is a whole number as jq prints it
# (no sign, no leading zero, at most 15 digits: exact in a double).
forge_json_uint() {
	forge_is_uint "$1" && [ "${#1}" -le 15 ] || return 1
	case $1 in 0?*) return 1 ;; esac
}

# forge_record_split TEXT: sets forge_record_json to the first line of TEXT
# (what forge_record's jq printed) and forge_runs_kept to its other lines, one
# run ID per line between newlines (just the newlines when none). By field
# splitting: dash takes time quadratic in the length for ${TEXT#*<newline>},
# half a minute for the record of a 200 kB command line.
forge_record_split() {
	local ifs="$IFS" noglob=
	case $- in *f*) noglob=1 ;; esac
	set -f
	IFS='
'
	# shellcheck disable=SC2086 # split on newlines, on purpose
	set -- $1
	forge_record_json=${1:-}
	[ "$#" -eq 0 ] || shift
	forge_runs_kept="
"
	[ "$#" -eq 0 ] || forge_runs_kept="
$*
"
	IFS=$ifs
	[ -n "$noglob" ] || set +f
}

# forge_change_write ID: replaces .forge/changes/ID.json by forge_record_json,
# atomically (forge-state put).
forge_change_write() {
	local file
	file=$forge_state_dir/changes/$1.json
	forge_state_require "$file" file
	printf '%s\n' "$forge_record_json" | forge_state put "$file" ||
		forge_die "$?" "cannot write $file"
}
