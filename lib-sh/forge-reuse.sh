# forge-reuse.sh — verdict reuse (forge-verify --reuse, SPEC 3.7): a verdict
# is reused only for exactly what was verified. The key is a SHA-256 over the
# tree of the snapshot (computed through a temporary index, never the
# user's), the steps as they would run, the mode, forge's version, the
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

# forge_reuse_git ROOT ARG...: git in ROOT on the index GIT_INDEX_FILE names
# (forge's own, forge_reuse_tree), with what decides the key's tree fixed
# whatever the configuration says: every stat check git has (ctime and
# inode included, no assume-unchanged, no file system monitor, no split
# index) and the untracked cache. No hook runs; unlike forge_git, git may
# write that index back (status keeps what it refreshed).
forge_reuse_git() {
	local root
	root=$1
	shift
	git --no-pager -C "$root" -c core.hooksPath=/dev/null -c core.fsmonitor=false \
		-c core.untrackedCache=true -c core.trustctime=true -c core.checkStat=default \
		-c core.ignoreStat=false -c core.splitIndex=false -c advice.addEmbeddedRepo=false "$@"
}

# forge_reuse_tree ROOT: sets forge_reuse_tree to the tree of the snapshot
# an --isolated run would verify (tracked files as they are in the working
# tree, untracked files that are not ignored), through an index of forge's
# own kept in .forge/reuse/ (which no sandboxed process can write): the
# user's index is read for its list of paths only, never for its stat data
# (anyone who can write it could hide a change there), and never written.
# The kept index is named after a fingerprint of what decides which paths
# the snapshot holds besides the working tree (the user's index, the
# exclude files, git's configuration files: forge_reuse_fingerprint). When
# one of that name exists and git status finds nothing changed against it,
# its tree is the key's (git status and write-tree, both on that index, the
# untracked cache and the cached trees doing most of the work); else it is
# brought up to date in a copy of its own (forge_reuse_rebuild). The
# snapshot's blobs and trees go to the repository's object store, as git
# add would put them (unreferenced: git gc prunes them). Exits 74 when git
# cannot compute it, 73 when .forge/reuse is not a folder forge may use.
forge_reuse_tree() {
	local kept
	forge_reuse_tree=
	forge_reuse_place
	forge_reuse_fingerprint "${GIT_INDEX_FILE:-$forge_git_dir/index}"
	kept=$forge_state_dir/reuse/index-$forge_reuse_fp
	forge_state_require "$kept" file
	if [ ! -f "$kept" ] || ! forge_reuse_clean "$1" "$kept"; then
		forge_reuse_rebuild "$1" "${GIT_INDEX_FILE:-$forge_git_dir/index}" "$kept"
	fi
	case $forge_reuse_tree in
	'' | *[!0-9a-f]*) forge_die 74 "cannot compute the tree of the working state of $1" ;;
	esac
}

# forge_reuse_place: makes .forge/reuse (in forge_state_dir) a folder of
# forge's own once .forge exists (a verification made it; --key alone makes
# no state). Exits 73 when either is not one forge may use (a symbolic link,
# a file): forge_state_path. Without it (no .forge yet, or inside a sandbox,
# where .forge is read-only) forge_reuse_rebuild works in TMPDIR.
forge_reuse_place() {
	local dir
	dir=$forge_state_dir/reuse
	forge_state_require "$dir" dir
	[ ! -d "$dir" ] && [ -d "$forge_state_dir" ] || return 0
	# A concurrent run may make it meanwhile.
	mkdir -m 700 -- "$dir" 2>/dev/null || :
	forge_state_require "$dir" dir
}

# forge_reuse_fingerprint INDEX: sets forge_reuse_fp to 32 hex digits of the
# SHA-256 of the stat data (size, inode, mtime and ctime to the nanosecond)
# of INDEX (the user's), the exclude files (info/exclude, the global one and
# the core.excludesFile forge_reuse_rebuild last found) and git's
# configuration files, and of the GIT_CONFIG_* variables: a change to any
# of them may change which ignored paths the snapshot holds, which git
# status on the kept index does not see.
forge_reuse_fingerprint() {
	local conf hint
	conf=${XDG_CONFIG_HOME:-${HOME:-/nonexistent}/.config}
	hint=/nonexistent
	! forge_is_real_file "$forge_state_dir/reuse/excludes" ||
		! forge_read_file "$forge_state_dir/reuse/excludes" || hint=$forge_file
	forge_reuse_fp=$(
		{
			printf '%s\n' "${GIT_CONFIG_PARAMETERS-}" "${GIT_CONFIG_COUNT-}" "${GIT_CONFIG_NOSYSTEM-}" \
				"${GIT_CONFIG_GLOBAL-}" "${GIT_CONFIG_SYSTEM-}" "$hint"
			stat -L -c '%n|%s|%i|%y|%z' -- "$1" "$forge_common_dir/info/exclude" "$forge_common_dir/config" \
				"$forge_git_dir/config.worktree" "$conf/git/config" "$conf/git/ignore" \
				"${HOME:-/nonexistent}/.gitconfig" "${GIT_CONFIG_GLOBAL:-/nonexistent}" \
				"${GIT_CONFIG_SYSTEM:-/etc/gitconfig}" "$hint" 2>/dev/null
		} | sha256sum
	) || forge_die 70 "sha256sum failed while computing the reuse key"
	forge_reuse_fp=${forge_reuse_fp%"${forge_reuse_fp#????????????????????????????????}"}
	case $forge_reuse_fp in
	'' | *[!0-9a-f]*) forge_die 70 "cannot compute the reuse key" ;;
	esac
}

# forge_reuse_clean ROOT KEPT: true, with forge_reuse_tree set, when git
# status finds the working tree as the kept index KEPT has it: no tracked
# file changed (its stat data, and the content of one written in the second
# of the index, racy git), no untracked file that is not ignored. Status
# keeps what it refreshed and the untracked cache in KEPT (under git's
# lock, which it skips when another run holds it); write-tree, with the
# cached trees valid, only reads it. Returns 1 otherwise (or when another
# run holds the lock write-tree wants).
forge_reuse_clean() {
	local forge_item forge_list out
	out=$(
		GIT_INDEX_FILE=$2
		export GIT_INDEX_FILE
		forge_reuse_git "$1" status --porcelain -unormal --ignore-submodules=dirty --no-renames 2>/dev/null
	) || return 1
	# "XY PATH": Y is the working tree against the index ("??" untracked);
	# X (the index against HEAD) says nothing here.
	forge_list=$out
	while forge_list_next; do
		case $forge_item in
		?' '*) ;;
		*) return 1 ;;
		esac
	done
	forge_reuse_tree=$(
		GIT_INDEX_FILE=$2
		export GIT_INDEX_FILE
		forge_reuse_git "$1" write-tree 2>/dev/null
	) || forge_reuse_tree=
	[ -n "$forge_reuse_tree" ]
}

# forge_reuse_rebuild ROOT INDEX KEPT: sets forge_reuse_tree to the tree of
# the snapshot, computed in a copy of a kept index (cp -p: git trusts an
# entry's stat data only when it is older than the index file, racy git),
# or from nothing when there is none, and keeps the result as KEPT: git add
# -A, then the tracked files that are ignored made those of INDEX (the
# user's: it decides which ignored files are tracked, and add -A never
# drops an ignored one it added when it was not), then write-tree. The copy
# is this run's own and renamed into place, so concurrent runs never share
# a half-written index; the other kept indexes go. Where .forge/reuse
# cannot be written (no .forge yet, inside a sandbox), the copy is made in
# TMPDIR and removed. Also records core.excludesFile for forge_reuse_fingerprint.
forge_reuse_rebuild() {
	local dir f pid seed tmp
	dir=$forge_state_dir/reuse
	tmp=$dir/tmp-$$
	seed=
	for f in "$dir"/index-*; do
		case $f in *.lock) continue ;; esac
		if forge_is_real_file "$f"; then
			seed=$f
			[ "$f" != "$3" ] || break
		fi
	done
	if ! forge_state_path "$tmp" file || ! rm -f -- "$tmp" "$tmp.ign" "$tmp.want" 2>/dev/null ||
		! { true >"$tmp"; } 2>/dev/null; then
		dir=
		tmp=$(mktemp -d "${TMPDIR:-/tmp}/forge-key.XXXXXX") ||
			forge_die 73 "cannot create a scratch folder in ${TMPDIR:-/tmp}"
		tmp=$tmp/index
	fi
	rm -f -- "$tmp"
	[ -z "$seed" ] || cp -p -- "$seed" "$tmp" 2>/dev/null || rm -f -- "$tmp"
	forge_reuse_tree=$(forge_reuse_update "$1" "$2" "$tmp") || forge_reuse_tree=
	if [ -z "$forge_reuse_tree" ] && [ -n "$seed" ]; then
		# A kept index git cannot read (a disk that filled up): from nothing.
		rm -f -- "$tmp" "$tmp.lock"
		forge_reuse_tree=$(forge_reuse_update "$1" "$2" "$tmp") || forge_reuse_tree=
	fi
	rm -f -- "$tmp.ign" "$tmp.want"
	if [ -z "$dir" ]; then
		rm -rf -- "${tmp%/index}"
		return 0
	fi
	if [ -z "$forge_reuse_tree" ] || ! mv -f -- "$tmp" "$3" 2>/dev/null; then
		rm -f -- "$tmp" "$tmp.lock"
		return 0
	fi
	# The kept indexes of other fingerprints, and what runs that died left.
	for f in "$dir"/index-* "$dir"/tmp-*; do
		case $f in
		"$3" | "$3.lock" | "$dir/index-*" | "$dir/tmp-*") continue ;;
		"$dir"/tmp-*)
			pid=${f#"$dir"/tmp-}
			pid=${pid%%.*}
			! kill -0 "$pid" 2>/dev/null || continue ;;
		esac
		rm -f -- "$f"
	done
	forge_reuse_excludes "$1"
}

# forge_reuse_update ROOT INDEX TMP: for forge_reuse_rebuild, brings the
# index TMP up to date with the working state (git add -A), makes its
# tracked ignored files those of INDEX, and prints its tree (write-tree).
# TMP.ign and TMP.want hold the lists when they differ.
forge_reuse_update() {
	local have want
	GIT_INDEX_FILE=$3
	export GIT_INDEX_FILE
	forge_reuse_git "$1" add -A >/dev/null 2>&1 || return 1
	have=$(forge_reuse_git "$1" ls-files -c -i --exclude-standard 2>/dev/null) || return 1
	want=$(
		GIT_INDEX_FILE=$2
		[ ! -f "$2" ] || forge_reuse_git "$1" ls-files -c -i --exclude-standard 2>/dev/null
	) || return 1
	if [ "$have" != "$want" ]; then
		forge_reuse_git "$1" ls-files -z -c -i --exclude-standard >"$3.ign" 2>/dev/null &&
			forge_reuse_git "$1" update-index -z --force-remove --stdin <"$3.ign" &&
			(
				GIT_INDEX_FILE=$2
				[ ! -f "$2" ] || forge_reuse_git "$1" ls-files -z -c -i --exclude-standard 2>/dev/null
			) >"$3.want" &&
			forge_reuse_git "$1" update-index -z --add --remove --stdin <"$3.want" || return 1
	fi
	forge_reuse_git "$1" write-tree 2>/dev/null
}

# forge_reuse_excludes ROOT: records in .forge/reuse/excludes the file
# core.excludesFile names (relative: to ROOT), for forge_reuse_fingerprint.
forge_reuse_excludes() {
	local file
	file=$(forge_git -C "$1" config --path --get core.excludesFile 2>/dev/null) || file=
	case $file in
	'' | *'
'*) file=/nonexistent ;;
	/*) ;;
	*) file=$1/$file ;;
	esac
	forge_read_file "$forge_state_dir/reuse/excludes" 2>/dev/null || forge_file=
	[ "$forge_file" != "$file" ] || return 0
	forge_state_path "$forge_state_dir/reuse/excludes" file || return 0
	{ printf '%s\n' "$file" >"$forge_state_dir/reuse/excludes.$$" &&
		mv -f -- "$forge_state_dir/reuse/excludes.$$" "$forge_state_dir/reuse/excludes"; } 2>/dev/null ||
		rm -f -- "$forge_state_dir/reuse/excludes.$$"
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
	local arg argc i isojson isolated names nl prints root sandbox sbjson value words
	root=$1 isolated=$2 sandbox=$3
	shift 3
	[ "$#" -eq 0 ] || shift
	forge_reuse_tree "$root"
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
	forge_reuse_text=$(
		printf 'forge-verify-key 2\ntree %s\nforge %s\ntimeout %s\n' "$forge_reuse_tree" "$(forge_version)" \
			"$forge_default_timeout"
		if [ "$isolated" = 1 ]; then printf 'isolated %s\n' "$isojson"; else echo 'isolated false'; fi
		printf 'sandbox %s\n' "$sbjson"
		if [ "$argc" -gt 0 ]; then
			printf 'argv %s\n' "$argc"
			i=0
			for arg in "$@"; do
				i=$((i + 1))
				[ "$i" -le "$argc" ] || break
				printf '%s\n' "${#arg}:$arg"
			done
		else
			printf 'steps %s\n' "$forge_steps"
		fi
		forge_list=$names
		while forge_list_next; do
			if [ "$forge_item" = PATH ]; then
				forge_reuse_path
				if [ -n "${PATH+set}" ]; then printf 'env PATH %s:%s\n' "${#forge_reuse_path}" "$forge_reuse_path"; else echo 'env PATH unset'; fi
			elif value=$(printenv -- "$forge_item" && echo .); then
				value=${value%?.}
				printf 'env %s %s:%s\n' "$forge_item" "${#value}" "$value"
			else
				printf 'env %s unset\n' "$forge_item"
			fi
		done
		printf '%s' "$prints"
		# One stat for every program: path, size, mtime, inode.
		shift "$argc"
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
