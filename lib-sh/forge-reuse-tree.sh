# forge-reuse-tree.sh — the tree a reuse key names (SPEC 3.7): the snapshot
# an --isolated run would verify, computed through an index of forge's own
# kept in .forge/reuse/ and never from the user's index's stat data, which
# anyone who can write that index could forge. Used by forge-reuse.sh.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_reuse_git [--exec] ROOT ARG...: git in ROOT on the index
# GIT_INDEX_FILE names (forge's own, forge_reuse_tree), with what decides the key's tree fixed
# whatever the configuration says: every stat check git has (ctime and
# inode included, no assume-unchanged, no file system monitor, no split
# index) and the untracked cache. No hook runs; unlike forge_git, git may
# write that index back (status keeps what it refreshed).
# With --exec first, git replaces the shell: for a whole $(...) only,
# where a function call costs a process of its own.
forge_reuse_git() {
	local root run
	run=$1
	[ "$run" != --exec ] || shift
	root=$1
	shift
	set -- --no-pager -C "$root" -c core.hooksPath=/dev/null -c core.fsmonitor=false \
		-c core.untrackedCache=true -c core.trustctime=true -c core.checkStat=default \
		-c core.ignoreStat=false -c core.splitIndex=false -c advice.addEmbeddedRepo=false "$@"
	[ "$run" != --exec ] || forge_git_exec "$@"
	git "$@"
}

# forge_reuse_tree ROOT [PROGRAM...]: sets forge_reuse_tree to the tree of
# the snapshot an --isolated run would verify (tracked files as they are in the working
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
# The PROGRAMs' stat data comes along (forge_reuse_fingerprint).
forge_reuse_tree() {
	local kept root
	root=$1
	shift
	forge_reuse_tree=
	forge_reuse_place
	forge_reuse_fingerprint "${GIT_INDEX_FILE:-$forge_git_dir/index}" "$@"
	kept=$forge_state_dir/reuse/index-$forge_reuse_fp
	forge_state_require "$kept" file
	if [ ! -f "$kept" ] || ! forge_reuse_clean "$root" "$kept"; then
		forge_reuse_rebuild "$root" "${GIT_INDEX_FILE:-$forge_git_dir/index}" "$kept"
	fi
	case $forge_reuse_tree in
	'' | *[!0-9a-f]*) forge_die 74 "cannot compute the tree of the working state of $root" ;;
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

# forge_reuse_fingerprint INDEX [PROGRAM...]: sets forge_reuse_fp to 32 hex
# digits of the SHA-256 of the stat data (size, inode, mtime and ctime to
# the nanosecond) of INDEX (the user's), the exclude files (info/exclude,
# the global one and the core.excludesFile forge_reuse_rebuild last found)
# and git's configuration files, and of the GIT_CONFIG_* variables: a change
# to any of them may change which ignored paths the snapshot holds, which
# git status on the kept index does not see. The same stat reads the
# PROGRAMs (the steps' programs, for the key): forge_reuse_programs gets a
# line "program PATH SIZE MTIME INODE" for each that is there, in order.
forge_reuse_fingerprint() {
	local conf hint i last line nl prog rest stats
	conf=${XDG_CONFIG_HOME:-${HOME:-/nonexistent}/.config}
	hint=/nonexistent nl='
'
	! forge_is_real_file "$forge_state_dir/reuse/excludes" ||
		! forge_read_file "$forge_state_dir/reuse/excludes" || hint=$forge_file
	# stat fails for the files that are not there: they print nothing. The
	# name comes first, the programs' mtime in seconds last.
	stats=$(stat -L -c '%n|%s|%i|%y|%z|%Y' -- "$1" "$forge_common_dir/info/exclude" "$forge_common_dir/config" \
		"$forge_git_dir/config.worktree" "$conf/git/config" "$conf/git/ignore" \
		"${HOME:-/nonexistent}/.gitconfig" "${GIT_CONFIG_GLOBAL:-/nonexistent}" \
		"${GIT_CONFIG_SYSTEM:-/etc/gitconfig}" "$hint" "$@" 2>/dev/null) || :
	shift
	# The programs' lines are the last ones, from the end. One that is not
	# there (gone since the caller looked) or has a newline in its path: a
	# stat of their own, as the key had them before.
	forge_reuse_programs='' i=$#
	while [ "$i" -gt 0 ]; do
		eval "prog=\${$i}"
		last=${stats##*"$nl"}
		case $prog:$last in
		*"$nl"*) break ;;
		"$prog:$prog|"*) ;;
		*) break ;;
		esac
		# SIZE|INODE|MTIME|CTIME|MTIME-SECONDS after the name.
		rest=${last#"$prog|"}
		line="program $prog ${rest%%|*} ${rest##*|}"
		rest=${rest#*|}
		forge_reuse_programs="$line ${rest%%|*}$nl$forge_reuse_programs"
		stats=${stats%"$last"}
		stats=${stats%"$nl"}
		i=$((i - 1))
	done
	if [ "$i" -gt 0 ]; then
		# (The fingerprint then holds the lines not taken off too: at worst,
		# one rebuild of the kept index.)
		forge_reuse_programs=$(stat -L -c 'program %n %s %Y %i' -- "$@" 2>/dev/null) || :
		[ -z "$forge_reuse_programs" ] || forge_reuse_programs=$forge_reuse_programs$nl
	fi
	# A here-document: no pipe and no subshell for printf.
	forge_reuse_fp=$(sha256sum <<EOF
${GIT_CONFIG_PARAMETERS-}
${GIT_CONFIG_COUNT-}
${GIT_CONFIG_NOSYSTEM-}
${GIT_CONFIG_GLOBAL-}
${GIT_CONFIG_SYSTEM-}
$hint
$stats
EOF
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
# lock, which it skips when another run holds it). The tree is then the
# one KEPT's cache tree records for all of it, read from the file by
# forge-index-tree: what write-tree would print, without its stat of every
# tree object. write-tree gives it when the helper cannot (exit 1: the
# cache tree invalidated; or forge_head, which tells a sha256 repository's
# names from sha1's, is not ROOT's: forge_repo_root). Returns 1 otherwise
# (or when another run holds the lock write-tree wants).
forge_reuse_clean() {
	local forge_item forge_list hash out
	out=$(
		GIT_INDEX_FILE=$2
		export GIT_INDEX_FILE
		forge_reuse_git --exec "$1" status --porcelain -unormal --ignore-submodules=dirty --no-renames 2>/dev/null
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
	forge_reuse_tree='' hash=''
	if [ "${forge_head_of:-}" = "$1" ]; then
		case ${#forge_head} in 40) hash=--sha1 ;; 64) hash=--sha256 ;; esac
	fi
	if [ -n "$hash" ]; then
		forge_libexec_path forge-index-tree
		forge_reuse_tree=$("$forge_libexec" "$hash" -- "$2" 2>/dev/null) || forge_reuse_tree=
	fi
	[ -n "$forge_reuse_tree" ] || forge_reuse_tree=$(
		GIT_INDEX_FILE=$2
		export GIT_INDEX_FILE
		forge_reuse_git --exec "$1" write-tree 2>/dev/null
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
