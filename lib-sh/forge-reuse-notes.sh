# forge-reuse-notes.sh — the verdicts kept for reuse (forge-reuse.sh, SPEC
# 3.7), read and written as git notes on the verified tree under
# refs/notes/forge-verify, one line per key:
#   {"key":"<hex>","verdict":"PASS|FAIL","run":"<run-id>","time":"<ts>","epoch":<s>,"host":"<host>"}
# Refs are writable from inside a sandbox, so a local entry is believed only
# when the timeline (which no sandboxed process can write) holds its run with
# the same key and verdict; entries of other refs only from refs the user
# lists in verify.reuse.trust.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_reuse_fanout: sets forge_reuse_fan2 and forge_reuse_fan4, the paths
# of forge_reuse_tree's note in a notes tree that git fanned out (ab/cd...,
# ab/cd/ef...).
forge_reuse_fanout() {
	local rest rest4
	rest=${forge_reuse_tree#??}
	forge_reuse_fan2=${forge_reuse_tree%"$rest"}/$rest
	rest4=${rest#??}
	forge_reuse_fan4=${forge_reuse_fan2%"$rest4"}/$rest4
}

# forge_reuse_entry LINE: true when LINE is a well-formed entry for
# forge_reuse_key; sets verdict, run, epoch and host, locals of
# forge_reuse_find (its only caller). Every field is checked against what
# forge writes, so nothing a hostile note holds reaches the terminal or a
# pattern.
forge_reuse_entry() {
	local rest time
	rest=${1#"{\"key\":\"$forge_reuse_key\",\"verdict\":\""}
	[ "$rest" != "$1" ] || return 1
	verdict=${rest%%\"*}
	rest=${rest#"$verdict\",\"run\":\""}
	run=${rest%%\"*}
	rest=${rest#"$run\",\"time\":\""}
	time=${rest%%\"*}
	rest=${rest#"$time\",\"epoch\":"}
	epoch=${rest%%,*}
	rest=${rest#"$epoch,\"host\":\""}
	host=${rest%\"\}}
	case $verdict in PASS | FAIL) ;; *) return 1 ;; esac
	forge_is_run_id "$run" || return 1
	forge_is_uint "$epoch" && [ "${#epoch}" -le 12 ] || return 1
	case $host in '' | *[!A-Za-z0-9._-]*) return 1 ;; esac
	[ "${#host}" -le 64 ] || return 1
	[ "$rest" = "$host\"}" ]
}

# forge_reuse_find ROOT: looks up forge_reuse_key in the note on
# forge_reuse_tree: the local ref's entry when the timeline backs it (this
# worktree's timeline, which no sandboxed process can write, holds the
# entry's run with its verdict and this key: an entry a sandboxed process
# wrote into the notes ref names no such run), else that of the first
# trusted ref holding one. Sets forge_reuse_verdict, forge_reuse_run,
# forge_reuse_host, forge_reuse_epoch and forge_reuse_from (the ref);
# returns 1 when there is none to believe. One git and one awk, which reads
# the timeline too.
forge_reuse_find() {
	local backed epoch file host nl out pass ref req run tab tag verdict
	forge_reuse_fanout
	# Trusted refs first and the local one last: the local note may hold
	# anything a sandbox wrote, and after it nothing is read.
	req=
	forge_list=$forge_reuse_trust
	while forge_list_next; do
		req="$req$forge_item:$forge_reuse_tree $forge_item
$forge_item:$forge_reuse_fan2 $forge_item
$forge_item:$forge_reuse_fan4 $forge_item
"
	done
	ref=refs/notes/forge-verify
	file=$forge_state_dir/timeline.jsonl
	[ ! -L "$forge_state_dir" ] && [ ! -L "$file" ] && [ -f "$file" ] || file=/dev/null
	# cat-file prints "<type> <size> <tag>", then <size> bytes and a newline
	# (or "<name> missing"); awk counts the bytes, so no line of a note can
	# pass for a header. Then, from the timeline, "B <run> <verdict>" for
	# each verify record of this key, as forge writes them.
	out=$(forge_git --exec -C "$1" cat-file --batch='%(objecttype) %(objectsize) %(rest)' 2>/dev/null <<EOF |
$req$ref:$forge_reuse_tree L
$ref:$forge_reuse_fan2 L
$ref:$forge_reuse_fan4 L
EOF
		LC_ALL=C awk -v want="{\"key\":\"$forge_reuse_key\"," -v key="\"key\":\"$forge_reuse_key\"" '
			FILENAME != "/dev/stdin" {
				i = index($0, "\"event\":\"verify\",\"run\":\"")
				if (i == 0 || index($0, key) == 0) next
				rest = substr($0, i + 24)
				j = index(rest, "\",\"verdict\":\"")
				if (j == 0) next
				v = substr(rest, j + 13)
				print "B\t" substr(rest, 1, j - 1) "\t" substr(v, 1, index(v, "\"") - 1)
				next
			}
			left > 0 {
				left -= length($0) + 1
				if (type == "blob" && index($0, want) == 1) print tag "\t" $0
				if (left == 0) skip = 1
				next
			}
			skip { skip = 0; if ($0 == "") next }
			NF == 3 && $2 ~ /^[0-9]+$/ { type = $1; tag = $3; left = $2 + 0; if (left == 0) skip = 1 }' /dev/stdin "$file") ||
		out=
	[ -n "$out" ] || return 1
	tab='	' nl='
'
	backed=$nl$out$nl
	# A local entry backed by the timeline first, then the trusted ones.
	for pass in local trusted; do
		forge_list=$out
		while forge_list_next; do
			tag=${forge_item%%"$tab"*}
			if [ "$pass" = local ]; then
				[ "$tag" = L ] || continue
				forge_reuse_entry "${forge_item#*"$tab"}" || continue
				case $backed in *"${nl}B$tab$run$tab$verdict$nl"*) ;; *) continue ;; esac
				forge_reuse_from=$ref
			else
				case $tag in L | B) continue ;; esac
				forge_reuse_entry "${forge_item#*"$tab"}" || continue
				forge_reuse_from=$tag
			fi
			forge_reuse_verdict=$verdict forge_reuse_run=$run
			forge_reuse_host=$host forge_reuse_epoch=$epoch
			return 0
		done
	done
	return 1
}

# forge_reuse_host: sets forge_reuse_host to this host's name in
# [A-Za-z0-9._-] (others become _), at most 64 characters. Builtins only
# where the kernel tells it.
forge_reuse_host() {
	local char out rest
	forge_reuse_host=
	if [ -r /proc/sys/kernel/hostname ]; then
		IFS= read -r forge_reuse_host </proc/sys/kernel/hostname || :
	fi
	[ -n "$forge_reuse_host" ] || forge_reuse_host=$(uname -n 2>/dev/null) || forge_reuse_host=
	out=
	while [ -n "$forge_reuse_host" ] && [ "${#out}" -lt 64 ]; do
		rest=${forge_reuse_host#?}
		char=${forge_reuse_host%"$rest"}
		case $char in [A-Za-z0-9._-]) ;; *) char=_ ;; esac
		out=$out$char
		forge_reuse_host=$rest
	done
	forge_reuse_host=${out:-unknown}
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
	local entry ref try verdict zero
	case $2 in PASS | FAIL) ;; *) return 0 ;; esac
	[ -z "$3" ] || [ "$3" = "$forge_reuse_tree" ] || return 0
	forge_reuse_host
	forge_reuse_fanout
	ref=refs/notes/forge-verify verdict=$2
	entry="{\"key\":\"$forge_reuse_key\",\"verdict\":\"$2\",\"run\":\"$forge_run_id\",\"time\":\"$forge_ts\",\"epoch\":$((forge_ms / 1000)),\"host\":\"$forge_reuse_host\"}"
	case ${#forge_reuse_tree} in
	40) zero=0000000000000000000000000000000000000000 ;;
	*) zero=0000000000000000000000000000000000000000000000000000000000000000 ;;
	esac
	try=0
	while [ "$try" -lt 10 ]; do
		try=$((try + 1))
		if forge_reuse_store_once "$1"; then return 0; fi
		sleep 0.1 2>/dev/null || sleep 1
	done
	forge_warn "could not record the verdict in $ref (another writer holds $forge_common_dir/$ref.lock?): it will not be reused"
}

# forge_reuse_store_once ROOT: one attempt of forge_reuse_store (called by
# it only: reads its locals ref, verdict, entry and zero); returns 1 when the
# ref moved or is locked meanwhile.
forge_reuse_store_once() {
	local blob commit index note old others tree
	old=$(forge_git -C "$1" rev-parse -q --verify "$ref^{commit}" 2>/dev/null) || old=
	note=$entry others=
	if [ -n "$old" ]; then
		# The other keys' entries stay (well-formed lines only, newest first).
		others=$(forge_git -C "$1" cat-file blob "$old:$forge_reuse_tree" 2>/dev/null |
			grep -a -v -F -e "{\"key\":\"$forge_reuse_key\"," | grep -a -E '^\{"key":"[0-9a-f]+","verdict":"[A-Z]+",' |
			head -n 31) || others=
	fi
	[ -z "$others" ] || note="$note
$others"
	blob=$(printf '%s\n' "$note" | forge_git -C "$1" hash-object -w --stdin) || return 1
	index=$(mktemp "${TMPDIR:-/tmp}/forge-notes.XXXXXX") || return 1
	rm -f -- "$index"
	commit=$(
		GIT_INDEX_FILE=$index
		GIT_AUTHOR_NAME=forge-verify GIT_AUTHOR_EMAIL=forge-verify@localhost
		GIT_COMMITTER_NAME=forge-verify GIT_COMMITTER_EMAIL=forge-verify@localhost
		export GIT_INDEX_FILE GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
		if [ -n "$old" ]; then
			forge_git -C "$1" read-tree "$old^{tree}" || exit 1
		fi
		printf '0 %s\t%s\n' "$zero" "$forge_reuse_fan2" "$zero" "$forge_reuse_fan4" |
			forge_git -C "$1" update-index --index-info || exit 1
		printf '100644 %s\t%s\n' "$blob" "$forge_reuse_tree" |
			forge_git -C "$1" update-index --index-info || exit 1
		tree=$(forge_git -C "$1" write-tree) || exit 1
		forge_git -C "$1" commit-tree --no-gpg-sign ${old:+-p "$old"} \
			-m "forge-verify: $verdict run $forge_run_id" "$tree" </dev/null
	) 2>/dev/null || commit=
	rm -f -- "$index"
	[ -n "$commit" ] || return 1
	forge_git -C "$1" -c core.filesRefLockTimeout=200 update-ref -m "forge-verify: run $forge_run_id" \
		"$ref" "$commit" "$old" 2>/dev/null
}
