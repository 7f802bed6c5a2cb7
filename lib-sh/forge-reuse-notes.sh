# forge-reuse-notes.sh — the verdicts kept for reuse (forge-reuse.sh, SPEC
# 3.7), read and written as git notes on the verified tree under
# refs/notes/forge-verify, one line per key:
#   {"key":"<hex>","verdict":"PASS|FAIL","run":"<run-id>","time":"<ts>","epoch":<s>,"host":"<host>"}
# Refs are writable from inside a sandbox, so a local entry is believed only
# when the timeline (which no sandboxed process can write) holds its run with
# the same key and verdict; entries of other refs only from refs the user
# lists in verify.reuse.trust.
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh

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
