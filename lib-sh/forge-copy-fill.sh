# forge-copy-fill.sh — filling the copy (forge-copy.sh) with the working
# state: the scan of the source's uncommitted changes and untracked files,
# their replay into the checkout of HEAD, and the tree of the verified
# snapshot (forge_copy_tree). A cold copy and a warm slot are filled alike.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_copy_fill ROOT COPY SCRATCH [OBJECTS [READY]]: replays ROOT's
# uncommitted changes and untracked files into COPY (a checkout of HEAD) and
# computes the snapshot's tree into forge_copy_tree (its objects in OBJECTS,
# READY 1 when SCRATCH holds an index for it: see forge_copy_snapshot_tree).
# SCRATCH holds the patch and the file lists.
forge_copy_fill() {
	local patch
	patch=$3/changes.patch
	! forge_path_exists "$3/tar.failed" || rm -f -- "$3/tar.failed"
	forge_copy_scan_wait "$1" "$3"
	if [ -s "$patch" ]; then
		# git apply checks every path first, a path beyond a symbolic link
		# included, and writes nothing unless all of them apply. (Not with
		# --index into the scratch index: that would patch the files of
		# HEAD, not those checked out, which a smudge filter may have made
		# other than what the patch was made against.)
		forge_git_apply "$2" "$patch" 2>"$3/git.err" ||
			forge_die 74 "the uncommitted changes do not apply to HEAD in the copy: $(cat "$3/git.err")"
	fi
	if [ -s "$3/untracked" ]; then
		forge_copy_links_check "$2" "$3/untracked"
		# File names come NUL-separated and verbatim (names may start with "-").
		{ tar -C "$1" --null --verbatim-files-from -T "$3/untracked" -cf - 2>"$3/tar.err" ||
			echo failed >"$3/tar.failed"; } | tar -C "$2" -xpf - 2>>"$3/tar.err" ||
			echo failed >"$3/tar.failed"
		[ ! -e "$3/tar.failed" ] ||
			forge_die 74 "cannot copy the untracked files: $(cat "$3/tar.err")"
	fi
	forge_copy_snapshot_tree "$2" "$3" "${4:-}" "${5:-}"
}

# forge_copy_scan ROOT SCRATCH: what the fill reads of the source ROOT, its
# uncommitted changes as a patch (SCRATCH/changes.patch) and the list of its
# untracked files (SCRATCH/untracked), made by a background job while the
# copy is made or reset (it reads the source only; the copy is neither read
# nor written). forge_copy_scan_wait waits for it.
forge_copy_scan() {
	forge_copy_scan_reap
	# (Not on the run's output: a caller reading it to its end never waits
	# for a scan a killed run left. It keeps a warm slot's lock, fd 9,
	# open while it runs: no later run takes the slot it writes in.)
	forge_copy_scan_run "$1" "$2" </dev/null >/dev/null 2>&1 &
	forge_copy_scan_pid=$!
}

# forge_copy_scan_run ROOT SCRATCH: the scan itself; exits 1 when the patch
# cannot be made, 2 when the untracked files cannot be listed (git's reason
# in SCRATCH/scan.err).
forge_copy_scan_run() {
	# Flags that user configuration cannot reshape: no colour, no external
	# diff or textconv, full binary patches, standard a/ b/ prefixes, fixed
	# context, submodules left alone. And the user's index is never written:
	# git diff refreshes the index it read and writes it back when an entry's
	# stat data is stale (a file touched, or committed in the same second),
	# --no-optional-locks or not (git 2.39), unless diff.autoRefreshIndex is
	# off; a file whose content is unchanged is then still left out of the
	# patch.
	forge_source_git "$1" -c diff.autoRefreshIndex=false diff HEAD --binary --full-index --no-color \
		--no-ext-diff --no-textconv --no-renames --ignore-submodules=all --unified=3 \
		--src-prefix=a/ --dst-prefix=b/ --output="$2/changes.patch" 2>"$2/scan.err" || return 1
	forge_source_git "$1" ls-files -z --others --exclude-standard >"$2/untracked" 2>"$2/scan.err" || return 2
}

# forge_copy_scan_wait ROOT SCRATCH: the scan's results (forge_copy_scan):
# waits for the background job, or scans now when none was started; exits
# 74 when the scan failed.
forge_copy_scan_wait() {
	local status=0
	if [ -n "${forge_copy_scan_pid:-}" ]; then
		wait "$forge_copy_scan_pid" || status=$?
		forge_copy_scan_pid=
	else
		forge_copy_scan_run "$1" "$2" || status=$?
	fi
	case $status in
	0) ;;
	1) forge_die 74 "cannot compute the uncommitted changes: $(cat "$2/scan.err")" ;;
	2) forge_die 74 "cannot list the untracked files: $(cat "$2/scan.err")" ;;
	*) forge_die 74 "cannot read the working state of $1 (status $status)" ;;
	esac
}

# forge_copy_scan_reap: waits for a scan still running (a run that stops
# before its fill), so that nothing writes in the scratch folder once the
# copy is removed or the slot released. Safe to call at any time.
forge_copy_scan_reap() {
	[ -n "${forge_copy_scan_pid:-}" ] || return 0
	wait "$forge_copy_scan_pid" 2>/dev/null || :
	forge_copy_scan_pid=
}

# forge_git_apply COPY [APPLY-OPTION...] PATCH: git apply in the copy,
# whitespace settings of the user's configuration neutralised (the patch is
# the user's own working state, not a contribution to police).
forge_git_apply() {
	local dir
	dir=$1
	shift
	forge_copy_git "$dir" -c apply.whitespace=nowarn -c apply.ignoreWhitespace=no \
		apply --whitespace=nowarn "$@"
}

# forge_copy_snapshot_tree COPY SCRATCH [OBJECTS [READY]]: sets
# forge_copy_tree to the tree of HEAD + the patch + the untracked files, built
# in a scratch index read from HEAD's tree (with its cached trees), so only
# what changed is hashed; or, with READY 1, in the copy of a warm slot's
# index its reset left in SCRATCH (forge_pool_reset, forge_pool_index_ready).
# (Not in a copy of a cold copy's index: every entry of it is of the second
# its file was checked out, so each index write after the first would hash
# them all again, racy-git.) The objects go to the folder OBJECTS (made when
# missing; a warm slot keeps its own outside the copy, so that the copy's
# .git stays small to remove and remake), else to the copy's, never to the
# source.
forge_copy_snapshot_tree() {
	local index="$2/index" objects="${3:-}" ready="${4:-}"
	forge_copy_objects "$objects"
	{
		# HEAD's tree read afresh (its cached trees come with it): entries
		# without stat data, never "racily clean", so no index write of the
		# scratch index hashes the files just checked out again.
		# (SCRATCH is new, so there is no index to remove; and read-tree
		# without -m never reads one.) A warm slot's reset left a copy of
		# its index there instead (forge_pool_reset): HEAD's tree with the
		# stat data of a checkout that rewrote only what the last run
		# changed, so only those few files are racy.
		if [ -z "$ready" ]; then
			forge_index_git "$index" "$objects" "$1" read-tree "$forge_head"
		fi &&
			if [ -s "$2/changes.patch" ]; then
				forge_index_git "$index" "$objects" "$1" -c apply.whitespace=nowarn -c apply.ignoreWhitespace=no \
					apply --whitespace=nowarn --cached "$2/changes.patch"
			fi &&
			if [ -s "$2/untracked" ]; then
				forge_index_git "$index" "$objects" "$1" update-index --add -z --stdin <"$2/untracked"
			fi &&
			forge_copy_tree=$(forge_index_git "$index" "$objects" "$1" write-tree)
	} || forge_die 74 "cannot compute the tree of the verified snapshot"
}

# forge_copy_objects [OBJECTS]: makes the folder OBJECTS (when given) a real
# folder, for the objects forge_copy_snapshot_tree writes.
forge_copy_objects() {
	if [ -n "${1:-}" ] && ! forge_is_real_dir "$1"; then
		forge_rm_tree "$1" || forge_die 73 "cannot remove $1"
		mkdir -p -- "$1" || forge_die 73 "cannot create $1"
	fi
}
