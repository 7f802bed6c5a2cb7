# forge-reuse.sh — verdict reuse (forge-verify --reuse, SPEC 3.7): a verdict
# is reused only for exactly what was verified. The key is a SHA-256 over the
# tree of the snapshot (computed through a temporary index, never the
# user's), the steps as they would run, the mode, forge's version, the
# values of verify.reuse.env and a fingerprint of each step's program.
# Verdicts live as git notes on the verified tree under
# refs/notes/forge-verify, one line per key:
#   {"key":"<hex>","verdict":"PASS|FAIL","run":"<run-id>","time":"<ts>","epoch":<s>,"host":"<host>"}
# Refs are writable from inside a sandbox, so a local entry is believed only
# when the timeline (which no sandboxed process can write) holds its run with
# the same key and verdict; entries of other refs only from refs the user
# lists in verify.reuse.trust.
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh

# forge_reuse_config CLI: sets forge_reuse_on (1 or 0) from CLI ("on" for
# --reuse, "off" for --no-reuse, which wins, "" for neither), else from
# verify.reuse in the merged configuration (read by forge_config_load).
forge_reuse_config() {
	forge_reuse_on=0 forge_record_key=
	case $1 in
	off) return 0 ;;
	on) forge_reuse_on=1 ;;
	*)
		# shellcheck disable=SC2086 # plain words
		set -- ${forge_config_verify_values:-}
		[ "${6:-false}" != true ] || forge_reuse_on=1 ;;
	esac
}

# forge_reuse_tree ROOT: sets forge_reuse_tree to the tree of the snapshot
# an --isolated run would verify (tracked files as they are in the working
# tree, untracked files that are not ignored), through a scratch copy of the
# index in TMPDIR: the user's index is read, never written. The snapshot's
# blobs and trees go to the repository's object store, as git add would put
# them (unreferenced: git gc prunes them); there they are written once, so
# the next key of a like state hashes only what changed. Exits 74 when git
# cannot compute it.
forge_reuse_tree() {
	forge_rt_index=${GIT_INDEX_FILE:-$forge_git_dir/index}
	forge_rt_tmp=$(mktemp -d "${TMPDIR:-/tmp}/forge-key.XXXXXX") ||
		forge_die 73 "cannot create a scratch folder in ${TMPDIR:-/tmp}"
	# Seeded from the real index, only what changed is hashed; without one
	# git starts from nothing.
	[ ! -f "$forge_rt_index" ] || cp -- "$forge_rt_index" "$forge_rt_tmp/index" 2>/dev/null ||
		rm -f -- "$forge_rt_tmp/index"
	forge_reuse_tree=$(
		GIT_INDEX_FILE=$forge_rt_tmp/index
		export GIT_INDEX_FILE
		forge_git -C "$1" -c core.splitIndex=false -c advice.addEmbeddedRepo=false \
			add -A >/dev/null 2>&1 &&
			forge_git -C "$1" write-tree 2>/dev/null
	) || forge_reuse_tree=
	rm -rf -- "$forge_rt_tmp"
	case $forge_reuse_tree in
	'' | *[!0-9a-f]*) forge_die 74 "cannot compute the tree of the working state of $1" ;;
	esac
}

# forge_reuse_program WORD DIR: sets forge_reuse_prog to the file exec would
# run for WORD (a step's first word) from DIR: WORD itself when it holds a
# slash, else the first executable file named WORD on PATH; nothing when
# there is none. Builtins only.
forge_reuse_program() {
	forge_reuse_prog=
	case $1 in
	'') return 0 ;;
	/*) forge_reuse_prog=$1; return 0 ;;
	*/*) forge_reuse_prog=$2/$1; return 0 ;;
	esac
	forge_rp_rest=${PATH:-}:
	while [ -n "$forge_rp_rest" ]; do
		forge_rp_dir=${forge_rp_rest%%:*}
		forge_rp_rest=${forge_rp_rest#*:}
		case $forge_rp_dir in
		'') forge_rp_dir=$2 ;;
		/*) ;;
		*) forge_rp_dir=$2/$forge_rp_dir ;;
		esac
		if [ -f "$forge_rp_dir/$1" ] && [ -x "$forge_rp_dir/$1" ]; then
			forge_reuse_prog=$forge_rp_dir/$1
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
	forge_rk_root=$1 forge_rk_isolated=$2 forge_rk_sandbox=$3
	shift 3
	[ "$#" -eq 0 ] || shift
	forge_reuse_tree "$forge_rk_root"
	[ "$#" -gt 0 ] || forge_steps_select "$forge_rk_root"
	forge_reuse_trust='' forge_rk_isojson='{"setup":null,"keep":null,"setupKey":null}'
	forge_rk_sbjson=- forge_rk_names=PATH forge_rk_words=
	if [ "$#" -eq 0 ] || [ "${forge_config_files:-1}" != 0 ] || [ "$forge_rk_sandbox" = true ]; then
		forge_reuse_key_config "$@"
	else
		case $1 in *'
'*) ;; *) forge_rk_words=$1 ;; esac
	fi
	forge_rk_prints='' forge_rk_nl='
' forge_rk_n=$#
	# The programs go after the argv (and a separator) in "$@".
	set -- "$@" --
	forge_list=$forge_rk_words
	while forge_list_next; do
		forge_reuse_program "$forge_item" "$forge_rk_root"
		if [ -n "$forge_reuse_prog" ] && [ -e "$forge_reuse_prog" ]; then
			set -- "$@" "$forge_reuse_prog"
		else
			forge_rk_prints="${forge_rk_prints}missing $forge_item$forge_rk_nl"
		fi
	done
	forge_reuse_text=$(
		printf 'forge-verify-key 2\ntree %s\nforge %s\ntimeout %s\n' "$forge_reuse_tree" "$(forge_version)" \
			"$forge_default_timeout"
		if [ "$forge_rk_isolated" = 1 ]; then printf 'isolated %s\n' "$forge_rk_isojson"; else echo 'isolated false'; fi
		printf 'sandbox %s\n' "$forge_rk_sbjson"
		if [ "$forge_rk_n" -gt 0 ]; then
			printf 'argv %s\n' "$forge_rk_n"
			forge_rk_i=0
			for forge_rk_arg in "$@"; do
				forge_rk_i=$((forge_rk_i + 1))
				[ "$forge_rk_i" -le "$forge_rk_n" ] || break
				printf '%s\n' "${#forge_rk_arg}:$forge_rk_arg"
			done
		else
			printf 'steps %s\n' "$forge_steps"
		fi
		forge_list=$forge_rk_names
		while forge_list_next; do
			if [ "$forge_item" = PATH ]; then
				forge_reuse_path
				if [ -n "${PATH+set}" ]; then printf 'env PATH %s:%s\n' "${#forge_reuse_path}" "$forge_reuse_path"; else echo 'env PATH unset'; fi
			elif forge_rk_value=$(printenv -- "$forge_item" && echo .); then
				forge_rk_value=${forge_rk_value%?.}
				printf 'env %s %s:%s\n' "$forge_item" "${#forge_rk_value}" "$forge_rk_value"
			else
				printf 'env %s unset\n' "$forge_item"
			fi
		done
		printf '%s' "$forge_rk_prints"
		# One stat for every program: path, size, mtime, inode.
		shift "$forge_rk_n"
		shift
		[ "$#" -eq 0 ] || stat -L -c 'program %n %s %Y %i' -- "$@" 2>/dev/null || :
		echo .
	)
	forge_reuse_text=${forge_reuse_text%.}
	forge_reuse_key=$(printf '%s' "$forge_reuse_text" | sha256sum) ||
		forge_die 70 "sha256sum failed while computing the reuse key"
	forge_reuse_key=${forge_reuse_key%% *}
	case $forge_reuse_key in
	'' | *[!0-9a-f]*) forge_die 70 "cannot compute the reuse key" ;;
	esac
}

# forge_reuse_key_config [COMMAND [ARG...]]: for forge_reuse_key, reads with
# one jq what the configuration adds to the key: forge_rk_isojson,
# forge_rk_sbjson (with --sandbox), forge_rk_names (verify.reuse.env),
# forge_reuse_trust, and forge_rk_words, the programs the steps start
# (COMMAND, else the first word of each step's run, and sh).
forge_reuse_key_config() {
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_rk_out=$(printf '%s' "${1:-}" | jq -R -s -r \
		--argjson config "$forge_config" --argjson steps "${forge_steps:-null}" --argjson argc "$#" \
		--arg sandbox "$forge_rk_sandbox" '
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
	forge_rk_names='' forge_rk_words=''
	forge_list=$forge_rk_out
	while forge_list_next; do
		case $forge_item in
		I*) forge_rk_isojson=${forge_item#I} ;;
		S*) forge_rk_sbjson=${forge_item#S} ;;
		N*) forge_rk_names=$forge_rk_names${forge_item#N}'
' ;;
		T*) forge_reuse_trust=$forge_reuse_trust${forge_item#T}'
' ;;
		W*) forge_rk_words=$forge_rk_words${forge_item#W}'
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

# forge_reuse_fanout: sets forge_reuse_fan2 and forge_reuse_fan4, the paths
# of forge_reuse_tree's note in a notes tree that git fanned out (ab/cd...,
# ab/cd/ef...).
forge_reuse_fanout() {
	forge_rf_rest=${forge_reuse_tree#??}
	forge_reuse_fan2=${forge_reuse_tree%"$forge_rf_rest"}/$forge_rf_rest
	forge_rf_rest4=${forge_rf_rest#??}
	forge_reuse_fan4=${forge_reuse_fan2%"$forge_rf_rest4"}/$forge_rf_rest4
}

# forge_reuse_entry LINE: true when LINE is a well-formed entry for
# forge_reuse_key; sets forge_re_verdict, forge_re_run, forge_re_epoch and
# forge_re_host. Every field is checked against what forge writes, so
# nothing a hostile note holds reaches the terminal or a pattern.
forge_reuse_entry() {
	forge_re=${1#"{\"key\":\"$forge_reuse_key\",\"verdict\":\""}
	[ "$forge_re" != "$1" ] || return 1
	forge_re_verdict=${forge_re%%\"*}
	forge_re=${forge_re#"$forge_re_verdict\",\"run\":\""}
	forge_re_run=${forge_re%%\"*}
	forge_re=${forge_re#"$forge_re_run\",\"time\":\""}
	forge_re_time=${forge_re%%\"*}
	forge_re=${forge_re#"$forge_re_time\",\"epoch\":"}
	forge_re_epoch=${forge_re%%,*}
	forge_re=${forge_re#"$forge_re_epoch,\"host\":\""}
	forge_re_host=${forge_re%\"\}}
	case $forge_re_verdict in PASS | FAIL) ;; *) return 1 ;; esac
	forge_is_run_id "$forge_re_run" || return 1
	forge_is_uint "$forge_re_epoch" && [ "${#forge_re_epoch}" -le 12 ] || return 1
	case $forge_re_host in '' | *[!A-Za-z0-9._-]*) return 1 ;; esac
	[ "${#forge_re_host}" -le 64 ] || return 1
	[ "$forge_re" = "$forge_re_host\"}" ]
}

# forge_reuse_believed: true when this worktree's timeline holds the run of
# the entry forge_reuse_entry read, with its verdict and this key: an entry
# that a sandboxed process wrote into the notes ref names no such run.
forge_reuse_believed() {
	forge_rb_file=$forge_state_dir/timeline.jsonl
	[ ! -L "$forge_state_dir" ] && [ ! -L "$forge_rb_file" ] && [ -f "$forge_rb_file" ] || return 1
	forge_rb_line=$(grep -F -e "\"event\":\"verify\",\"run\":\"$forge_re_run\",\"verdict\":\"$forge_re_verdict\"," \
		-- "$forge_rb_file" 2>/dev/null) || return 1
	case $forge_rb_line in
	*"\"key\":\"$forge_reuse_key\""*) return 0 ;;
	esac
	return 1
}

# forge_reuse_find ROOT: looks up forge_reuse_key in the note on
# forge_reuse_tree: the local ref's entry when the timeline backs it, else
# that of the first trusted ref holding one. Sets forge_reuse_verdict,
# forge_reuse_run, forge_reuse_host, forge_reuse_epoch and forge_reuse_from
# (the ref); returns 1 when there is none to believe. One git and one awk.
forge_reuse_find() {
	forge_reuse_fanout
	# Trusted refs first and the local one last: the local note may hold
	# anything a sandbox wrote, and after it nothing is read.
	forge_rf_req=
	forge_list=$forge_reuse_trust
	while forge_list_next; do
		forge_rf_req="$forge_rf_req$forge_item:$forge_reuse_tree $forge_item
$forge_item:$forge_reuse_fan2 $forge_item
$forge_item:$forge_reuse_fan4 $forge_item
"
	done
	forge_rf_ref=refs/notes/forge-verify
	forge_rf_req="$forge_rf_req$forge_rf_ref:$forge_reuse_tree L
$forge_rf_ref:$forge_reuse_fan2 L
$forge_rf_ref:$forge_reuse_fan4 L
"
	# cat-file prints "<type> <size> <tag>", then <size> bytes and a newline
	# (or "<name> missing"); awk counts the bytes, so no line of a note can
	# pass for a header.
	# shellcheck disable=SC2016 # an awk program, not shell
	forge_rf_out=$(printf '%s' "$forge_rf_req" |
		forge_git -C "$1" cat-file --batch='%(objecttype) %(objectsize) %(rest)' 2>/dev/null |
		LC_ALL=C awk -v want="{\"key\":\"$forge_reuse_key\"," '
			left > 0 {
				left -= length($0) + 1
				if (type == "blob" && index($0, want) == 1) print tag "\t" $0
				if (left == 0) skip = 1
				next
			}
			skip { skip = 0; if ($0 == "") next }
			NF == 3 && $2 ~ /^[0-9]+$/ { type = $1; tag = $3; left = $2 + 0; if (left == 0) skip = 1 }') ||
		forge_rf_out=
	[ -n "$forge_rf_out" ] || return 1
	forge_rf_tab='	'
	# A local entry backed by the timeline first, then the trusted ones.
	for forge_rf_pass in local trusted; do
		forge_list=$forge_rf_out
		while forge_list_next; do
			forge_rf_tag=${forge_item%%"$forge_rf_tab"*}
			if [ "$forge_rf_pass" = local ]; then
				[ "$forge_rf_tag" = L ] || continue
				forge_reuse_entry "${forge_item#*"$forge_rf_tab"}" || continue
				forge_reuse_believed || continue
				forge_reuse_from=$forge_rf_ref
			else
				[ "$forge_rf_tag" != L ] || continue
				forge_reuse_entry "${forge_item#*"$forge_rf_tab"}" || continue
				forge_reuse_from=$forge_rf_tag
			fi
			forge_reuse_verdict=$forge_re_verdict forge_reuse_run=$forge_re_run
			forge_reuse_host=$forge_re_host forge_reuse_epoch=$forge_re_epoch
			return 0
		done
	done
	return 1
}

# forge_reuse_age SECONDS: sets forge_reuse_age to a short form of a
# duration: 42s, 5m, 3h, 2d (0s when negative: another host's clock).
forge_reuse_age() {
	forge_ra=$1
	[ "$forge_ra" -ge 0 ] 2>/dev/null || forge_ra=0
	if [ "$forge_ra" -lt 120 ]; then forge_reuse_age=${forge_ra}s
	elif [ "$forge_ra" -lt 7200 ]; then forge_reuse_age=$((forge_ra / 60))m
	elif [ "$forge_ra" -lt 172800 ]; then forge_reuse_age=$((forge_ra / 3600))h
	else forge_reuse_age=$((forge_ra / 86400))d
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
	forge_verdict=$forge_reuse_verdict
	forge_breaker_update "$forge_reuse_verdict" "$forge_threshold"
	forge_rr_change=null forge_rr_head=null
	[ -z "$2" ] || forge_rr_change="\"$2\""
	[ -z "${forge_head:-}" ] || forge_rr_head="\"$forge_head\""
	forge_record_json="{\"ts\":\"$forge_ts\",\"event\":\"verify\",\"run\":\"$forge_run_id\",\"verdict\":\"$forge_reuse_verdict\",\"isolated\":$1,\"sandbox\":null,\"change\":$forge_rr_change,\"head\":$forge_rr_head,\"tree\":\"$forge_reuse_tree\",\"tested\":null,\"reused\":{\"run\":\"$forge_reuse_run\",\"host\":\"$forge_reuse_host\"},\"steps\":[],\"streak\":$forge_streak,\"breaker\":\"$forge_breaker\",\"key\":\"$forge_reuse_key\"}"
	forge_timeline_append "$forge_record_json"
	[ -z "$2" ] || forge_change_write "$2"
	forge_recorded=1
	forge_reuse_age "$((forge_ms / 1000 - forge_reuse_epoch))"
}

# forge_reuse_print_verdict: prints the verdict line of a reused run,
# "Verdict: PASS (reused run <id> from <age> ago, <host>)", coloured as
# forge_verdict_print does.
forge_reuse_print_verdict() {
	forge_rpv_rest=" (reused run $forge_reuse_run from $forge_reuse_age ago, $forge_reuse_host)"
	if forge_use_color; then
		case $forge_reuse_verdict in
		PASS) printf 'Verdict: \033[32mPASS\033[0m%s\n' "$forge_rpv_rest" ;;
		*) printf 'Verdict: \033[31m%s\033[0m%s\n' "$forge_reuse_verdict" "$forge_rpv_rest" ;;
		esac
	else
		printf 'Verdict: %s%s\n' "$forge_reuse_verdict" "$forge_rpv_rest"
	fi
}

# forge_reuse_host: sets forge_reuse_host to this host's name in
# [A-Za-z0-9._-] (others become _), at most 64 characters. Builtins only
# where the kernel tells it.
forge_reuse_host() {
	forge_reuse_host=
	if [ -r /proc/sys/kernel/hostname ]; then
		IFS= read -r forge_reuse_host </proc/sys/kernel/hostname || :
	fi
	[ -n "$forge_reuse_host" ] || forge_reuse_host=$(uname -n 2>/dev/null) || forge_reuse_host=
	forge_rh_out=
	while [ -n "$forge_reuse_host" ] && [ "${#forge_rh_out}" -lt 64 ]; do
		forge_rh_rest=${forge_reuse_host#?}
		forge_rh_c=${forge_reuse_host%"$forge_rh_rest"}
		case $forge_rh_c in [A-Za-z0-9._-]) ;; *) forge_rh_c=_ ;; esac
		forge_rh_out=$forge_rh_out$forge_rh_c
		forge_reuse_host=$forge_rh_rest
	done
	forge_reuse_host=${forge_rh_out:-unknown}
}

# forge_reuse_store ROOT VERDICT TREE: after a run of forge_reuse_key that
# gave VERDICT, adds its entry to the note on forge_reuse_tree (replacing
# the key's old one; at most 32 entries a note). Only a PASS or a FAIL, and
# only when TREE (the copy's tree, empty without --isolated) is the key's.
# The note is written with plumbing under git's ref lock, compared and
# swapped (git update-ref NEW OLD), retried when another run got there
# first: concurrent runs keep one intact note and a killed one leaves the
# previous. No hook runs and no other ref is touched. A failure is a
# warning: the verdict stands.
forge_reuse_store() {
	case $2 in PASS | FAIL) ;; *) return 0 ;; esac
	[ -z "$3" ] || [ "$3" = "$forge_reuse_tree" ] || return 0
	forge_reuse_host
	forge_reuse_fanout
	forge_rs_ref=refs/notes/forge-verify forge_rs_verdict=$2
	forge_rs_entry="{\"key\":\"$forge_reuse_key\",\"verdict\":\"$2\",\"run\":\"$forge_run_id\",\"time\":\"$forge_ts\",\"epoch\":$((forge_ms / 1000)),\"host\":\"$forge_reuse_host\"}"
	case ${#forge_reuse_tree} in
	40) forge_rs_zero=0000000000000000000000000000000000000000 ;;
	*) forge_rs_zero=0000000000000000000000000000000000000000000000000000000000000000 ;;
	esac
	forge_rs_try=0
	while [ "$forge_rs_try" -lt 10 ]; do
		forge_rs_try=$((forge_rs_try + 1))
		if forge_reuse_store_once "$1"; then return 0; fi
		sleep 0.1 2>/dev/null || sleep 1
	done
	forge_warn "could not record the verdict in $forge_rs_ref (another writer holds $forge_common_dir/$forge_rs_ref.lock?): it will not be reused"
}

# forge_reuse_store_once ROOT: one attempt of forge_reuse_store; returns 1
# when the ref moved or is locked meanwhile.
forge_reuse_store_once() {
	forge_rs_old=$(forge_git -C "$1" rev-parse -q --verify "$forge_rs_ref^{commit}" 2>/dev/null) || forge_rs_old=
	forge_rs_note=$forge_rs_entry forge_rs_others=
	if [ -n "$forge_rs_old" ]; then
		# The other keys' entries stay (well-formed lines only, newest first).
		forge_rs_others=$(forge_git -C "$1" cat-file blob "$forge_rs_old:$forge_reuse_tree" 2>/dev/null |
			grep -v -F -e "{\"key\":\"$forge_reuse_key\"," | grep -E '^\{"key":"[0-9a-f]+","verdict":"[A-Z]+",' |
			head -n 31) || forge_rs_others=
	fi
	[ -z "$forge_rs_others" ] || forge_rs_note="$forge_rs_note
$forge_rs_others"
	forge_rs_blob=$(printf '%s\n' "$forge_rs_note" | forge_git -C "$1" hash-object -w --stdin) || return 1
	forge_rs_index=$(mktemp "${TMPDIR:-/tmp}/forge-notes.XXXXXX") || return 1
	rm -f -- "$forge_rs_index"
	forge_rs_commit=$(
		GIT_INDEX_FILE=$forge_rs_index
		GIT_AUTHOR_NAME=forge-verify GIT_AUTHOR_EMAIL=forge-verify@localhost
		GIT_COMMITTER_NAME=forge-verify GIT_COMMITTER_EMAIL=forge-verify@localhost
		export GIT_INDEX_FILE GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
		if [ -n "$forge_rs_old" ]; then
			forge_git -C "$1" read-tree "$forge_rs_old^{tree}" || exit 1
		fi
		printf '0 %s\t%s\n' "$forge_rs_zero" "$forge_reuse_fan2" "$forge_rs_zero" "$forge_reuse_fan4" |
			forge_git -C "$1" update-index --index-info || exit 1
		printf '100644 %s\t%s\n' "$forge_rs_blob" "$forge_reuse_tree" |
			forge_git -C "$1" update-index --index-info || exit 1
		forge_rs_tree=$(forge_git -C "$1" write-tree) || exit 1
		forge_git -C "$1" commit-tree --no-gpg-sign ${forge_rs_old:+-p "$forge_rs_old"} \
			-m "forge-verify: $forge_rs_verdict run $forge_run_id" "$forge_rs_tree" </dev/null
	) 2>/dev/null || forge_rs_commit=
	rm -f -- "$forge_rs_index"
	[ -n "$forge_rs_commit" ] || return 1
	forge_git -C "$1" -c core.filesRefLockTimeout=200 update-ref -m "forge-verify: run $forge_run_id" \
		"$forge_rs_ref" "$forge_rs_commit" "$forge_rs_old" 2>/dev/null
}
