# forge-copy.sh — the ephemeral copy of the working state for
# forge-verify --isolated (SPEC 3.5): HEAD checked out as a detached worktree,
# the uncommitted changes replayed with git apply, the untracked files that
# are not ignored copied over. Cold copies live in
# ${TMPDIR:-/tmp}/forge-verify.XXXXXX/ and are removed after the run; warm
# ones are pooled under <git-common-dir>/forge/pool/ and reset before each use.
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh

# forge_read_file FILE: sets forge_file to FILE's whole content, less its
# final newline (paths in git's files may hold newlines); returns 1 when FILE
# cannot be read. Builtins only: it runs for every registration on each run.
forge_read_file() {
	forge_file=
	[ -r "$1" ] || return 1
	forge_file_sep=
	while IFS= read -r forge_file_line || [ -n "$forge_file_line" ]; do
		forge_file=$forge_file$forge_file_sep$forge_file_line
		forge_file_sep='
'
	done <"$1"
}

# forge_proc_start PID: sets forge_proc_start to the start time of process
# PID (from /proc; empty where there is none): with the PID, it tells a live
# owner from a recycled PID.
forge_proc_start() {
	forge_proc_start=
	read -r forge_proc_stat 2>/dev/null <"/proc/$1/stat" || return 0
	# shellcheck disable=SC2086 # fields after "(comm)" are plain numbers
	set -- ${forge_proc_stat##*) }
	[ "$#" -lt 20 ] || forge_proc_start=${20}
}

# forge_copy_owner: prints "PID START" identifying this process.
forge_copy_owner() {
	forge_proc_start "$$"
	printf '%s %s\n' "$$" "$forge_proc_start"
}

# forge_copy_owner_alive FILE: true when the process recorded in FILE runs.
forge_copy_owner_alive() {
	read -r forge_owner_pid forge_owner_start 2>/dev/null <"$1" || return 1
	forge_is_uint "$forge_owner_pid" || return 1
	kill -0 "$forge_owner_pid" 2>/dev/null || return 1
	[ -n "$forge_owner_start" ] || return 0
	forge_proc_start "$forge_owner_pid"
	[ -z "$forge_proc_start" ] || [ "$forge_proc_start" = "$forge_owner_start" ]
}

# forge_copy_tmp_alive DIR: true while the run that made the copy folder DIR
# may still be using it. The folder is named after its owner's PID (six hex
# digits), so even one killed before it wrote DIR/owner (PID and start time)
# can be told apart; a folder forge cannot attribute is left alone.
forge_copy_tmp_alive() {
	[ -s "$1/owner" ] && { forge_copy_owner_alive "$1/owner"; return; }
	case ${1##*.} in
	[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f])
		kill -0 "$((0x${1##*.}))" 2>/dev/null ;;
	*) return 0 ;;
	esac
}

# forge_rm_tree PATH: removes PATH, also when a step made parts of it
# read-only.
forge_rm_tree() {
	[ -e "$1" ] || [ -L "$1" ] || return 0
	rm -rf -- "$1" 2>/dev/null && return 0
	chmod -R u+rwx -- "$1" 2>/dev/null || :
	rm -rf -- "$1"
}

# forge_copy_prune: removes cold copies whose owner is gone (a run that was
# SIGKILLed), with their worktree registrations in this repository. Needs
# forge_common_dir.
forge_copy_prune() {
	for forge_prune_admin in "$forge_common_dir"/worktrees/*/; do
		[ -f "$forge_prune_admin/gitdir" ] || continue
		forge_read_file "$forge_prune_admin/gitdir" 2>/dev/null || continue
		forge_prune_path=$forge_file
		case $forge_prune_path in
		*/forge-verify.??????/*/.git) ;;
		*) continue ;;
		esac
		forge_prune_tmp=${forge_prune_path%/*/.git}
		if [ -d "$forge_prune_tmp" ]; then
			forge_copy_tmp_alive "$forge_prune_tmp" && continue
			forge_rm_tree "$forge_prune_tmp" || continue
		fi
		# The copy is gone; its registration goes with it (never one that git
		# is still initializing: that is locked).
		[ -e "$forge_prune_admin/locked" ] || forge_worktree_unregister "${forge_prune_admin%/}"
	done
	# Copies that died before their worktree was registered.
	for forge_prune_tmp in "${TMPDIR:-/tmp}"/forge-verify.??????/; do
		forge_prune_tmp=${forge_prune_tmp%/}
		[ -d "$forge_prune_tmp" ] || continue
		forge_copy_tmp_alive "$forge_prune_tmp" || forge_rm_tree "$forge_prune_tmp" || :
	done
	return 0
}

# git (2.39) can die when one "git worktree add" lists the worktrees while
# another is half-way through writing its registration, or while one is being
# removed. So forge makes and removes registrations one at a time, under
# <git-common-dir>/forge/worktrees.lock; the checkout itself runs unlocked.

# forge_worktree_locked COMMAND...: runs COMMAND holding the registration lock.
forge_worktree_locked() {
	[ -d "$forge_common_dir/forge" ] || mkdir -p -- "$forge_common_dir/forge" ||
		forge_die 73 "cannot create $forge_common_dir/forge"
	flock -w 60 -o "$forge_common_dir/forge/worktrees.lock" "$@"
}

# forge_worktree_add ROOT DIR ERRFILE [--force]: registers a detached worktree
# of ROOT at HEAD in DIR (under the lock), then checks it out.
forge_worktree_add() {
	forge_wt_root=$1 forge_wt_dir=$2 forge_wt_err=$3
	shift 3
	forge_worktree_locked git -c core.hooksPath=/dev/null -C "$forge_wt_root" \
		worktree add --quiet --no-checkout --detach "$@" "$forge_wt_dir" "$forge_head" \
		>"$forge_wt_err" 2>&1 &&
		forge_git -C "$forge_wt_dir" reset --hard --quiet "$forge_head" >>"$forge_wt_err" 2>&1
}

# forge_worktree_unregister ADMIN: removes a worktree registration folder:
# moved out of worktrees/ under the lock (git sees it whole or not at all),
# then deleted.
forge_worktree_unregister() {
	[ -d "$1" ] || return 0
	forge_wt_trash=$forge_common_dir/forge/trash.$$
	rm -rf -- "$forge_wt_trash"
	if forge_worktree_locked mv -- "$1" "$forge_wt_trash" 2>/dev/null; then
		rm -rf -- "$forge_wt_trash"
	fi
}

# forge_copy_create ROOT: makes a cold copy of ROOT's working state. Sets
# forge_copy_tmp (the temporary folder), forge_copy_dir (the copy's root),
# forge_copy_admin (its registration in the common dir) and forge_copy_tree
# (the tree of the verified snapshot). Exits 69 without a commit, 74 when
# the copy cannot be made faithfully.
forge_copy_create() {
	[ -z "${forge_copy_tmp:-}" ] ||
		forge_die 70 "a copy exists already ($forge_copy_tmp): forge_copy_destroy it first"
	forge_copy_require_head "$1"
	forge_copy_prune
	# Named after this process (see forge_copy_tmp_alive); mkdir, not
	# mktemp, so the name says whose it is from the instant it exists. One
	# left by an earlier process with the same PID is dead by definition.
	forge_copy_tmp=${TMPDIR:-/tmp}/forge-verify.$(printf '%06x' "$$")
	if ! mkdir -m 700 -- "$forge_copy_tmp" 2>/dev/null; then
		if [ -L "$forge_copy_tmp" ] || [ ! -d "$forge_copy_tmp" ] ||
			! forge_rm_tree "$forge_copy_tmp" || ! mkdir -m 700 -- "$forge_copy_tmp"; then
			forge_die 73 "cannot create the folder $forge_copy_tmp"
		fi
	fi
	forge_copy_owner >"$forge_copy_tmp/owner" || forge_die 73 "cannot write in $forge_copy_tmp"
	# The copy's name ends in the folder's suffix (its owner's PID): git
	# names the worktree's registration after it, so two live runs never
	# share a registration name.
	forge_copy_name=${1##*/}
	forge_copy_dir=$forge_copy_tmp/${forge_copy_name:-repo}-${forge_copy_tmp##*.}
	forge_worktree_add "$1" "$forge_copy_dir" "$forge_copy_tmp/git.err" ||
		forge_die 74 "cannot check out HEAD into the copy: $(cat "$forge_copy_tmp/git.err")"
	# Read now, before any step could rewrite the copy's .git file.
	forge_admin_of "$forge_copy_dir"
	forge_copy_admin=$forge_admin
	forge_copy_fill "$1" "$forge_copy_dir" "$forge_copy_tmp" "$forge_copy_admin"
}

# forge_copy_require_head ROOT: sets forge_head and forge_common_dir; exits 69
# when the repository has no commit yet.
forge_copy_require_head() {
	[ "${forge_head_of:-}" = "$1" ] || forge_head "$1"
	[ -n "$forge_head" ] || forge_die 69 "--isolated needs a commit; $1 has none yet"
	forge_require_tool flock tar
	forge_git_common_dir "$1" || forge_die 69 "cannot find the git directory of $1"
}

# forge_admin_of WORKTREE: sets forge_admin to the registration folder named
# by WORKTREE/.git (empty unless it lies in the common dir's worktrees/).
forge_admin_of() {
	forge_admin=
	forge_read_file "$1/.git" 2>/dev/null || return 0
	forge_admin=${forge_file#gitdir: }
	case $forge_admin in
	"$forge_common_dir"/worktrees/?*) ;;
	*) forge_admin= ;;
	esac
}

# forge_copy_fill ROOT COPY SCRATCH ADMIN: replays ROOT's uncommitted changes
# and untracked files into COPY (a checkout of HEAD, registered in ADMIN) and
# computes the snapshot's tree into forge_copy_tree. SCRATCH holds the patch
# and the file lists.
forge_copy_fill() {
	forge_fill_patch=$3/changes.patch
	# Flags that user configuration cannot reshape: no colour, no external
	# diff or textconv, full binary patches, standard a/ b/ prefixes, fixed
	# context, submodules left alone.
	forge_git -C "$1" diff HEAD --binary --full-index --no-color --no-ext-diff \
		--no-textconv --no-renames --ignore-submodules=all --unified=3 \
		--src-prefix=a/ --dst-prefix=b/ --output="$forge_fill_patch" 2>"$3/git.err" ||
		forge_die 74 "cannot compute the uncommitted changes: $(cat "$3/git.err")"
	if [ -s "$forge_fill_patch" ]; then
		forge_git_apply -C "$2" "$forge_fill_patch" 2>"$3/git.err" ||
			forge_die 74 "the uncommitted changes do not apply to HEAD in the copy: $(cat "$3/git.err")"
	fi
	forge_git -C "$1" ls-files -z --others --exclude-standard >"$3/untracked" 2>"$3/git.err" ||
		forge_die 74 "cannot list the untracked files: $(cat "$3/git.err")"
	if [ -s "$3/untracked" ]; then
		# File names come NUL-separated and verbatim (names may start with "-").
		{ tar -C "$1" --null --verbatim-files-from -T "$3/untracked" -cf - 2>"$3/tar.err" ||
			echo failed >"$3/tar.failed"; } | tar -C "$2" -xpf - 2>>"$3/tar.err" ||
			echo failed >"$3/tar.failed"
		[ ! -e "$3/tar.failed" ] ||
			forge_die 74 "cannot copy the untracked files: $(cat "$3/tar.err")"
	fi
	forge_copy_snapshot_tree "$2" "$3" "$4"
}

# forge_git_apply [-C DIR] [APPLY-OPTION...] PATCH: git apply, whitespace
# settings of the user's configuration neutralised (the patch is the user's
# own working state, not a contribution to police).
forge_git_apply() {
	if [ "$1" = -C ]; then
		forge_apply_dir=$2
		shift 2
	else
		forge_apply_dir=.
	fi
	forge_git -c apply.whitespace=nowarn -c apply.ignoreWhitespace=no -C "$forge_apply_dir" \
		apply --whitespace=nowarn "$@"
}

# forge_copy_snapshot_tree COPY SCRATCH ADMIN: sets forge_copy_tree to the
# tree of HEAD + the patch + the untracked files, built in a scratch index
# that starts as a copy of the copy's own (HEAD, with its cached trees), so
# only what changed is hashed. Neither index the user or the steps see is
# touched.
forge_copy_snapshot_tree() {
	forge_tree_index=$2/index
	if [ -f "$3/index" ]; then
		cp -- "$3/index" "$forge_tree_index"
	else
		GIT_INDEX_FILE=$forge_tree_index forge_git -C "$1" read-tree "$forge_head"
	fi &&
		if [ -s "$2/changes.patch" ]; then
			GIT_INDEX_FILE=$forge_tree_index forge_git_apply -C "$1" --cached "$2/changes.patch"
		fi &&
		if [ -s "$2/untracked" ]; then
			GIT_INDEX_FILE=$forge_tree_index forge_git -C "$1" update-index --add -z --stdin <"$2/untracked"
		fi &&
		forge_copy_tree=$(GIT_INDEX_FILE=$forge_tree_index forge_git -C "$1" write-tree) ||
		forge_die 74 "cannot compute the tree of the verified snapshot"
}

# forge_copy_destroy: removes the cold copy and its worktree registration.
# Safe to call more than once and on a half-made copy.
forge_copy_destroy() {
	if [ -n "${forge_copy_tmp:-}" ]; then
		forge_rm_tree "$forge_copy_tmp" ||
			forge_warn "could not remove the copy $forge_copy_tmp"
		forge_copy_tmp=
	fi
	if [ -n "${forge_copy_admin:-}" ]; then
		forge_worktree_unregister "$forge_copy_admin"
		forge_copy_admin=
	fi
}

# forge_pool_acquire ROOT: takes a free warm slot (locking it on file
# descriptor 9 for the rest of the run), resets it to HEAD with every
# untracked and ignored file removed, and fills it like a cold copy. Sets
# forge_copy_dir, forge_copy_tree and forge_pool_slot.
forge_pool_acquire() {
	forge_copy_require_head "$1"
	forge_pool=$forge_common_dir/forge/pool
	[ -d "$forge_pool" ] || mkdir -p -- "$forge_pool" || forge_die 73 "cannot create $forge_pool"
	forge_pool_slot=1
	while :; do
		exec 9>"$forge_pool/$forge_pool_slot.lock" || forge_die 73 "cannot create $forge_pool/$forge_pool_slot.lock"
		flock -n 9 && break
		exec 9>&-
		forge_pool_slot=$((forge_pool_slot + 1))
		[ "$forge_pool_slot" -le 64 ] || forge_die 75 "every warm slot in $forge_pool is busy"
	done
	forge_pool_dir=$forge_pool/$forge_pool_slot
	forge_copy_dir=$forge_pool_dir/${1##*/}
	[ "$forge_copy_dir" != "$forge_pool_dir/" ] || forge_copy_dir=$forge_pool_dir/repo
	if ! forge_pool_reset "$1"; then
		# A slot that cannot be reset is made anew.
		forge_pool_discard
		mkdir -p -- "$forge_pool_dir" || forge_die 73 "cannot create $forge_pool_dir"
		# --force: replaces a registration whose folder went missing.
		forge_worktree_add "$1" "$forge_copy_dir" "$forge_pool_dir/git.err" --force ||
			forge_die 74 "cannot check out HEAD into $forge_copy_dir: $(cat "$forge_pool_dir/git.err")"
	fi
	forge_admin_of "$forge_copy_dir"
	forge_pool_admin=$forge_admin
	# The scratch files are rewritten each run; only a failure marker could
	# linger from an earlier one.
	[ -d "$forge_pool_dir/scratch" ] || mkdir -- "$forge_pool_dir/scratch" ||
		forge_die 73 "cannot create $forge_pool_dir/scratch"
	[ ! -e "$forge_pool_dir/scratch/tar.failed" ] || rm -f -- "$forge_pool_dir/scratch/tar.failed"
	forge_copy_fill "$1" "$forge_copy_dir" "$forge_pool_dir/scratch" "$forge_pool_admin"
}

# forge_pool_reset ROOT: brings the slot back to HEAD: tracked files restored,
# every untracked and ignored file gone. Fails when the slot is missing or
# broken.
forge_pool_reset() {
	[ -f "$forge_copy_dir/.git" ] || return 1
	forge_admin_of "$forge_copy_dir"
	[ -n "$forge_admin" ] && [ -d "$forge_admin" ] || return 1
	forge_git -C "$forge_copy_dir" checkout --quiet --force --detach "$forge_head" >/dev/null 2>&1 ||
		return 1
	forge_git -C "$forge_copy_dir" clean -ffdxq >/dev/null 2>&1 && return 0
	# A step may have left read-only folders behind.
	chmod -R u+rwx -- "$forge_copy_dir" 2>/dev/null || :
	forge_git -C "$forge_copy_dir" clean -ffdxq >/dev/null 2>&1
}

# forge_pool_discard: removes the current slot's copy and registration.
forge_pool_discard() {
	forge_admin=
	[ ! -f "$forge_copy_dir/.git" ] || forge_admin_of "$forge_copy_dir"
	[ -z "$forge_admin" ] || forge_worktree_unregister "$forge_admin"
	# Never "git worktree prune" here: it could remove the registration of a
	# copy another run is making right now.
	forge_rm_tree "$forge_pool_dir" || forge_die 73 "cannot remove the broken slot $forge_pool_dir"
}

# forge_pool_release: puts back the slot's .git file if a step removed or
# rewrote it (so the registration stays valid and git worktree prune leaves
# it alone), and unlocks the slot. Safe to call when no slot is held.
forge_pool_release() {
	[ -n "${forge_pool_admin:-}" ] || return 0
	if [ -d "$forge_copy_dir" ]; then
		forge_read_file "$forge_copy_dir/.git" 2>/dev/null || :
		if [ "$forge_file" != "gitdir: $forge_pool_admin" ]; then
			chmod u+w -- "$forge_copy_dir" 2>/dev/null || :
			rm -rf -- "$forge_copy_dir/.git"
			printf 'gitdir: %s\n' "$forge_pool_admin" >"$forge_copy_dir/.git" || :
		fi
	fi
	forge_pool_admin=
	exec 9>&-
}
