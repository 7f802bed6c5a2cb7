# forge-reuse.sh — verdict reuse (forge-verify --reuse, SPEC 3.7): a verdict
# is reused only for exactly what was verified. The key is a SHA-256 over the
# tree of the snapshot (forge-reuse-tree.sh: through an index of forge's
# own, never the user's), the steps as they would run, the mode, forge's version, the
# values of verify.reuse.env and a fingerprint of each step's program.
# Verdicts live as git notes on the verified tree (forge-reuse-notes.sh);
# a verdict found there is replayed as this run's (forge_reuse_replay).
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_reuse_config CLI: sets forge_reuse_on (1 or 0) from CLI ("on" for
# --reuse, "off" for --no-reuse, which wins, "" for neither), else from
# verify.reuse in the merged configuration (read by forge_config_load).
forge_reuse_config() {
	local n rest
	forge_reuse_on=0 forge_record_key=
	case $1 in
	off) return 0 ;;
	on) forge_reuse_on=1 ;;
	*)
		# The sixth word of forge_config_verify_values: verify.reuse's "enabled".
		rest=${forge_config_verify_values:-} n=0
		while [ "$n" -lt 5 ]; do
			[ "${rest#* }" != "$rest" ] || return 0
			rest=${rest#* } n=$((n + 1))
		done
		[ "${rest%% *}" != true ] || forge_reuse_on=1 ;;
	esac
}

# forge_reuse_program WORD DIR: sets forge_reuse_prog to the file exec would
# run for WORD (a step's first word) from DIR: WORD itself when it holds a
# slash, else the first executable file named WORD on PATH; nothing when
# there is none. Builtins only.
forge_reuse_program() {
	local dir rest
	forge_reuse_prog=
	case $1 in
	'') return 0 ;;
	/*) forge_reuse_prog=$1; return 0 ;;
	*/*) forge_reuse_prog=$2/$1; return 0 ;;
	esac
	rest=${PATH:-}:
	while [ -n "$rest" ]; do
		dir=${rest%%:*}
		rest=${rest#*:}
		case $dir in
		'') dir=$2 ;;
		/*) ;;
		*) dir=$2/$dir ;;
		esac
		if [ -f "$dir/$1" ] && [ -x "$dir/$1" ]; then
			forge_reuse_prog=$dir/$1
			return 0
		fi
	done
}

# forge_reuse_path: sets forge_reuse_path to PATH as the key holds it: git
# puts its exec-path (GIT_EXEC_PATH) first on the PATH of every hook and
# command it runs (pre-commit, pre-push, rebase -x), which would make a
# verdict from a hook never that of the same verification from the harness.
# That entry (once or more, at the front) is left out; the programs are
# still looked up on the real PATH, so a step whose program git's folder
# provides (git itself) keys apart.
forge_reuse_path() {
	forge_reuse_path=${PATH:-}
	[ -n "${GIT_EXEC_PATH:-}" ] || return 0
	while [ "${forge_reuse_path#"$GIT_EXEC_PATH:"}" != "$forge_reuse_path" ]; do
		forge_reuse_path=${forge_reuse_path#"$GIT_EXEC_PATH:"}
	done
}

# forge_reuse_key ROOT ISOLATED SANDBOX [-- COMMAND [ARG...]]: sets
# forge_reuse_key (64 hex digits), forge_reuse_tree, forge_reuse_text (what
# the key is the SHA-256 of) and forge_reuse_trust (the trusted notes refs,
# one a line) for a run of COMMAND, else of the configured or detected
# steps, in ROOT, with ISOLATED 1 or 0 and SANDBOX true or not. Needs
# forge_config_load and forge_default_timeout. Exits 65 for a trust entry
# that is not a ref name or an env entry that is not a variable name.
# With ISOLATED the configured verify.isolated setup, keep and setupKey are
# part of the key; what detection would put in their place follows from the
# tree and forge's version, which are in it already. A -- COMMAND without
# configuration files or --sandbox needs no jq: the text is the same as jq
# would make it.
forge_reuse_key() {
	local arg argc argvtext i isojson isolated names nl prints root sandbox sbjson value words
	root=$1 isolated=$2 sandbox=$3
	shift 3
	[ "$#" -eq 0 ] || shift
	[ "$#" -gt 0 ] || forge_steps_select "$root"
	forge_reuse_trust='' isojson='{"setup":null,"keep":null,"setupKey":null}'
	sbjson=- names=PATH words=
	if [ "$#" -eq 0 ] || [ "${forge_config_files:-1}" != 0 ] || [ "$sandbox" = true ]; then
		forge_reuse_key_config "$@"
	else
		case $1 in *'
'*) ;; *) words=$1 ;; esac
	fi
	prints='' nl='
' argc=$#
	# The programs go after the argv (and a separator) in "$@".
	set -- "$@" --
	forge_list=$words
	while forge_list_next; do
		forge_reuse_program "$forge_item" "$root"
		if [ -n "$forge_reuse_prog" ] && [ -e "$forge_reuse_prog" ]; then
			set -- "$@" "$forge_reuse_prog"
		else
			prints="${prints}missing $forge_item$nl"
		fi
	done
	# The text is built in this shell: a subshell, and every process, counts
	# on the path of a reused run (bench/reuse.sh).
	forge_version --set
	argvtext=
	if [ "$argc" -gt 0 ]; then
		argvtext="argv $argc$nl"
		i=0
		for arg in "$@"; do
			i=$((i + 1))
			[ "$i" -le "$argc" ] || break
			argvtext="$argvtext${#arg}:$arg$nl"
		done
	fi
	# The tree, and with it the programs' stat data: path, size, mtime, inode.
	shift "$argc"
	shift
	forge_reuse_tree "$root" "$@"
	forge_reuse_text="forge-verify-key 2${nl}tree $forge_reuse_tree${nl}forge $forge_release${nl}timeout $forge_default_timeout$nl"
	if [ "$isolated" = 1 ]; then
		forge_reuse_text="${forge_reuse_text}isolated $isojson$nl"
	else
		forge_reuse_text="${forge_reuse_text}isolated false$nl"
	fi
	forge_reuse_text="${forge_reuse_text}sandbox $sbjson$nl"
	if [ "$argc" -gt 0 ]; then
		forge_reuse_text=$forge_reuse_text$argvtext
	else
		forge_reuse_text="${forge_reuse_text}steps $forge_steps$nl"
	fi
	forge_list=$names
	while forge_list_next; do
		if [ "$forge_item" = PATH ]; then
			forge_reuse_path
			if [ -n "${PATH+set}" ]; then
				forge_reuse_text="${forge_reuse_text}env PATH ${#forge_reuse_path}:$forge_reuse_path$nl"
			else
				forge_reuse_text="${forge_reuse_text}env PATH unset$nl"
			fi
		elif value=$(printenv -- "$forge_item" && echo .); then
			value=${value%?.}
			forge_reuse_text="${forge_reuse_text}env $forge_item ${#value}:$value$nl"
		else
			forge_reuse_text="${forge_reuse_text}env $forge_item unset$nl"
		fi
	done
	forge_reuse_text=$forge_reuse_text$prints$forge_reuse_programs
	# A here-document rather than printf | sha256sum: a process less. It
	# puts back the newline the text ends with.
	forge_reuse_key=$(sha256sum <<EOF
${forge_reuse_text%"$nl"}
EOF
	) || forge_die 70 "sha256sum failed while computing the reuse key"
	forge_reuse_key=${forge_reuse_key%% *}
	case $forge_reuse_key in
	'' | *[!0-9a-f]*) forge_die 70 "cannot compute the reuse key" ;;
	esac
}

# forge_reuse_key_config [COMMAND [ARG...]]: for forge_reuse_key (called by
# it only, it reads its local sandbox and sets its locals), reads with one jq
# what the configuration adds to the key: isojson, sbjson (with --sandbox),
# names (verify.reuse.env), forge_reuse_trust, and words, the programs the
# steps start (COMMAND, else the first word of each step's run, and sh).
forge_reuse_key_config() {
	local out
	out=$(printf '%s' "${1:-}" | jq -R -s -r \
		--argjson config "$forge_config" --argjson steps "${forge_steps:-null}" --argjson argc "$#" \
		--arg sandbox "$sandbox" '
		def firstword: sub("^[[:space:]]+"; "")
		  | sub("^([A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*[[:space:]]+)+"; "")
		  | ([capture("^(?<w>[^[:space:];&|()<>`\"'"'"'$\\\\]+)").w] | first // "");
		. as $argv0
		| ($config.verify.reuse // false | if type == "object" then . else {enabled: .} end) as $r
		| "I\($config.verify.isolated // {} | {setup, keep, setupKey} | tojson)",
		  (if $sandbox == "true" then "S\($config.sandbox
		      | {backend, image, bwrap, network, mounts, mountProjectReadonly, resources} | tojson)"
		   else empty end),
		  (($r.env // ["PATH"])[]
		    | if test("^[A-Za-z_][A-Za-z0-9_]*$") then "N\(.)" else "Eenv\t\(tojson | .[:80])" end),
		  (($r.trust // [])[]
		    | if test("^refs/[A-Za-z0-9._/-]+$") and (test("\\.\\.|//|/$|\\.lock$") | not)
		        and . != "refs/notes/forge-verify"
		      then "T\(.)" else "Etrust\t\(tojson | .[:80])" end),
		  ((if $argc > 0 then [$argv0] else ["sh", ($steps[].run | firstword)] end)
		    | unique[] | select(. != "" and (test("\n") | not)) | "W\(.)")') ||
		forge_die 70 "jq failed while computing the reuse key"
	names='' words=''
	forge_list=$out
	while forge_list_next; do
		case $forge_item in
		I*) isojson=${forge_item#I} ;;
		S*) sbjson=${forge_item#S} ;;
		N*) names=$names${forge_item#N}'
' ;;
		T*) forge_reuse_trust=$forge_reuse_trust${forge_item#T}'
' ;;
		W*) words=$words${forge_item#W}'
' ;;
		Etrust*) forge_die 65 "configuration: key verify.reuse.trust: ${forge_item#Etrust?} is not the full name of a notes ref (refs/...) other than refs/notes/forge-verify" ;;
		E*) forge_die 65 "configuration: key verify.reuse.env: ${forge_item#Eenv?} is not a variable name" ;;
		esac
	done
}

# forge_reuse_print JSON: prints the key (forge-verify --key): the key alone,
# or with JSON 1 a JSON object of the key, the tree and the text the key is
# the SHA-256 of.
forge_reuse_print() {
	if [ "$1" != 1 ]; then
		printf '%s\n' "$forge_reuse_key"
		return 0
	fi
	printf '%s' "$forge_reuse_text" | jq -R -s -c --arg key "$forge_reuse_key" --arg tree "$forge_reuse_tree" \
		'{key: $key, tree: $tree, text: .}' ||
		forge_die 70 "jq failed while printing the reuse key"
}

# forge_reuse_age SECONDS: sets forge_reuse_age to a short form of a
# duration: 42s, 5m, 3h, 2d (0s when negative: another host's clock).
forge_reuse_age() {
	local seconds
	seconds=$1
	[ "$seconds" -ge 0 ] 2>/dev/null || seconds=0
	if [ "$seconds" -lt 120 ]; then forge_reuse_age=${seconds}s
	elif [ "$seconds" -lt 7200 ]; then forge_reuse_age=$((seconds / 60))m
	elif [ "$seconds" -lt 172800 ]; then forge_reuse_age=$((seconds / 3600))h
	else forge_reuse_age=$((seconds / 86400))d
	fi
}

# forge_reuse_replay ISOLATED CHANGE: records the verdict forge_reuse_find
# found as this run's: the breaker counts it as that verdict, and the record
# (steps [], "reused" naming whose it was) goes to the timeline and the
# change report as forge_record would write it. Every value in it is of a
# checked form (run IDs, hex, the change ID's characters, the host's), so
# the record is written without jq. Retention is left to the next run that
# runs steps. Sets forge_verdict, and forge_reuse_age for forge_reuse_print_verdict.
forge_reuse_replay() {
	local change_json head_json
	forge_verdict=$forge_reuse_verdict
	forge_breaker_update "$forge_reuse_verdict" "$forge_threshold"
	change_json=null head_json=null
	[ -z "$2" ] || change_json="\"$2\""
	[ -z "${forge_head:-}" ] || head_json="\"$forge_head\""
	forge_record_json="{\"ts\":\"$forge_ts\",\"event\":\"verify\",\"run\":\"$forge_run_id\",\"verdict\":\"$forge_reuse_verdict\",\"isolated\":$1,\"sandbox\":null,\"change\":$change_json,\"head\":$head_json,\"tree\":\"$forge_reuse_tree\",\"tested\":null,\"reused\":{\"run\":\"$forge_reuse_run\",\"host\":\"$forge_reuse_host\"},\"steps\":[],\"streak\":$forge_streak,\"breaker\":\"$forge_breaker\",\"key\":\"$forge_reuse_key\"}"
	forge_timeline_append "$forge_record_json"
	[ -z "$2" ] || forge_change_write "$2"
	forge_recorded=1
	forge_reuse_age "$((forge_ms / 1000 - forge_reuse_epoch))"
}

# forge_reuse_print_verdict: prints the verdict line of a reused run,
# "Verdict: PASS (reused run <id> from <age> ago, <host>)", coloured as
# forge_verdict_print does.
forge_reuse_print_verdict() {
	local reused
	reused=" (reused run $forge_reuse_run from $forge_reuse_age ago, $forge_reuse_host)"
	if forge_use_color; then
		case $forge_reuse_verdict in
		PASS) printf 'Verdict: \033[32mPASS\033[0m%s\n' "$reused" ;;
		*) printf 'Verdict: \033[31m%s\033[0m%s\n' "$forge_reuse_verdict" "$reused" ;;
		esac
	else
		printf 'Verdict: %s%s\n' "$forge_reuse_verdict" "$reused"
	fi
}
