# forge-pool.sh — the warm pool of forge-verify --isolated --warm (SPEC 3.5):
# slots under ${XDG_CACHE_HOME:-$HOME/.cache}/forge/pool/<repo-id>/<slot>/,
# outside the repository, each locked by the run that uses it and reset
# completely to HEAD before it is filled like a cold copy (forge-copy.sh).
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_pool_base: sets forge_pool_base to forge/pool in the XDG cache
# folder (forge_xdg_dir: a relative XDG_CACHE_HOME is ignored, as everywhere
# else). Exits 73 when there is none.
forge_pool_base() {
	forge_xdg_dir cache ||
		forge_die 73 "no folder for the warm pool: set XDG_CACHE_HOME or HOME to an absolute path"
	forge_pool_base=$forge_xdg/forge/pool
}

# forge_repo_id: sets forge_repo_id to the first 16 hex digits of the SHA-256
# of the source's git common dir (its physical path).
forge_repo_id() {
	forge_repo_id=$(printf '%s' "$forge_common_real" | sha256sum) ||
		forge_die 69 "sha256sum failed"
	forge_repo_id=${forge_repo_id%"${forge_repo_id#????????????????}"}
}

# forge_pool_dir_prepare DIR: makes DIR a real folder of its own: a symbolic
# link or anything else in its place is removed first.
forge_pool_dir_prepare() {
	forge_clear_for_dir "$1" || forge_die 73 "cannot remove $1"
	# Another run may make it at the same moment.
	[ -d "$1" ] || mkdir -m 700 -- "$1" 2>/dev/null || forge_is_real_dir "$1" ||
		forge_die 73 "cannot create $1"
}

# forge_pool_repo ROOT: creates this repository's pool folder,
# forge_pool_base/forge_repo_id (both set), with a "source" file naming the
# git common dir (so --prune can tell a pool whose repository is gone).
forge_pool_repo() {
	local pool
	forge_pool_base
	forge_copy_place_check "$forge_pool_base" 'warm pool'
	[ -d "$forge_pool_base" ] || mkdir -p -- "$forge_pool_base" 2>/dev/null ||
		forge_die 73 "cannot create $forge_pool_base"
	forge_repo_id
	pool=$forge_pool_base/$forge_repo_id
	forge_pool_dir_prepare "$pool"
	forge_read_file "$pool/source" 2>/dev/null || forge_file=
	if [ "$forge_file" != "$forge_common_real" ]; then
		{ printf '%s\n' "$forge_common_real" >"$pool/source.$$" &&
			mv -f -- "$pool/source.$$" "$pool/source"; } ||
			forge_die 73 "cannot write $pool/source"
	fi
}

# forge_pool_acquire ROOT: takes the lowest free warm slot (locking it on file
# descriptor 9 for the rest of the run), resets it completely to HEAD and
# fills it like a cold copy. Sets forge_copy_dir (the copy in the slot),
# forge_copy_tree and forge_pool_state (forge's files about the slot: its
# clean index, the setup stamp, scratch files).
# The paths in forge_isolated_keep (newline-separated) survive the reset.
forge_pool_acquire() {
	local name dir entry lock pool slot tries
	forge_copy_require_head "$1"
	forge_require_tool sha256sum
	forge_pool_repo "$1"
	pool=$forge_pool_base/$forge_repo_id
	forge_copy_prune "${TMPDIR:-/tmp}"
	slot=1 tries=0
	while :; do
		lock=$pool/$slot.lock
		# Opening a FIFO would block; a link would lock what it points to.
		forge_clear_for_file "$lock" || forge_die 73 "cannot remove $lock"
		exec 9>>"$lock" || forge_die 73 "cannot create $lock"
		if flock -n 9; then
			forge_lock_held "$lock" && break
			# --prune removed the slot (and its lock file) between the
			# open and the lock: try the same slot again.
			exec 9>&-
			tries=$((tries + 1))
			[ "$tries" -le 16 ] || forge_die 75 "the warm slot $lock keeps being removed"
			continue
		fi
		exec 9>&-
		slot=$((slot + 1))
		[ "$slot" -le 64 ] || forge_die 75 "every warm slot in $pool is busy"
	done
	forge_pool_held=1
	dir=$pool/$slot
	forge_pool_state=$pool/$slot.state
	forge_pool_dir_prepare "$dir"
	forge_pool_dir_prepare "$forge_pool_state"
	# Scratch files are made anew each run (what was left there, a FIFO
	# say, is never opened).
	forge_pool_scratch_clear "$forge_pool_state/scratch"
	# The source is read while the slot is reset.
	forge_copy_scan "$1" "$forge_pool_state/scratch"
	name=${1##*/}
	forge_copy_dir=$dir/${name:-repo}
	# The slot holds the copy and nothing else (another worktree of the same
	# repository leaves a copy of another name; a step may write next to it).
	for entry in "$dir"/* "$dir"/.[!.]* "$dir"/..?*; do
		[ "$entry" = "$forge_copy_dir" ] || forge_rm_tree "$entry" ||
			forge_die 73 "cannot remove $entry"
	done
	forge_pool_dir_prepare "$forge_copy_dir"
	if ! forge_pool_reset "$1"; then
		# A slot that cannot be reset is made anew.
		rm -f -- "$forge_pool_state/index" "$forge_pool_state/index.head" "$forge_pool_state/setup" \
			"$forge_pool_state/git-init"
		forge_rm_tree "$forge_copy_dir" || forge_die 73 "cannot remove the broken slot $forge_copy_dir"
		forge_pool_dir_prepare "$forge_copy_dir"
		forge_pool_reset "$1" ||
			forge_die 74 "cannot check out HEAD into $forge_copy_dir: $(cat "$forge_pool_state/scratch/git.err")"
	fi
	forge_copy_fill "$1" "$forge_copy_dir" "$forge_pool_state/scratch" "$forge_pool_state/objects" \
		"$forge_pool_index_ready"
}

# forge_pool_scratch_clear DIR: makes DIR an empty real folder: what it
# holds is removed (by one rm, and only when it holds something), anything
# else in its place replaced.
forge_pool_scratch_clear() {
	local dir="$1" e
	if forge_is_real_dir "$dir"; then
		set --
		for e in "$dir"/* "$dir"/.[!.]* "$dir"/..?*; do
			! forge_path_exists "$e" || set -- "$@" "$e"
		done
		{ [ "$#" -eq 0 ] || rm -rf -- "$@" 2>/dev/null; } && return 0
	fi
	forge_rm_tree "$dir" || forge_die 73 "cannot remove $dir"
	forge_pool_dir_prepare "$dir"
}

# forge_pool_reset ROOT: brings the slot to HEAD as a fresh copy would be: a
# new .git (refs, config, sparse-checkout, hooks, objects of earlier steps
# gone), tracked files restored, every untracked and ignored file removed but
# the keep paths, and those only when they are real folders. The checkout
# works on the slot's own index, kept outside the copy where no step writes
# it (index flags a step set are not in it), with the time it was written:
# its stat data spares rewriting unchanged files, and never passes a file a
# step touched for clean (forge_copy_checkout). The copy and the scratch
# folder get a copy of it; forge_pool_index_ready is 1 when the snapshot's
# tree is to be built in the latter (forge_copy_snapshot_tree).
forge_pool_reset() {
	local index same scratch
	# Nothing of a sandbox of this slot (one a killed run left) may run
	# while the host resets it: see forge_contain_begin.
	forge_contain_forget "${forge_copy_dir%/*}"
	scratch=$forge_pool_state/scratch
	forge_pool_index_ready=
	forge_copy_repo "$1" "$forge_copy_dir" "$scratch" "$forge_pool_state/git-init"
	index=$forge_pool_state/index
	forge_clear_for_file "$index" || return 1
	# The commit the index was checked out at by the last reset that
	# finished: the same as HEAD's, and the files are restored from it
	# without reading HEAD's trees again.
	same=
	if forge_is_real_file "$index" && forge_is_real_file "$forge_pool_state/index.head" &&
		forge_read_file "$forge_pool_state/index.head" &&
		[ "$forge_file" = "$forge_head" ]; then
		same=1
	fi
	if [ -z "$same" ]; then
		# Emptied before the checkout rewrites the index: a run killed
		# half-way never leaves an index that claims another commit.
		forge_clear_for_file "$forge_pool_state/index.head" &&
			: >"$forge_pool_state/index.head" || return 1
	fi
	set --
	forge_list=${forge_isolated_keep:-}
	while forge_list_next; do
		set -- "$@" "--exclude=/$forge_item"
	done
	# Before the checkout, which puts back whatever of HEAD this removes.
	forge_pool_keep_check
	forge_copy_checkout "$forge_copy_dir" "$scratch/git.err" "$index" "$same" || return 1
	if ! forge_pool_clean "$index" "$@"; then
		# A step may have left read-only folders behind.
		chmod -R u+rwx -- "$forge_copy_dir" 2>/dev/null || :
		forge_pool_clean "$index" "$@" || return 1
	fi
	forge_pool_dir_modes || return 1
	# The copy's index, and the scratch index the snapshot's tree is built
	# in (forge_copy_snapshot_tree), from one read of the slot's. Only when
	# the files were restored from it (same commit: only what the last run
	# touched was rewritten): after a checkout of a new HEAD, the first one
	# in particular, many entries are of this second, and each write of the
	# scratch index would hash their files again (racy-git).
	tee -- "$forge_copy_dir/.git/index" <"$index" >"$scratch/index" || return 1
	[ -z "$same" ] || forge_pool_index_ready=1
	[ -n "$same" ] || printf '%s\n' "$forge_head" >"$forge_pool_state/index.head" || return 1
}

# forge_pool_dir_modes: gives every folder of the slot's copy (the copy
# itself too, .git and the keep paths apart) the mode a cold copy's have,
# 0777 less the umask, as git and mkdir make them: git restores files, not
# the modes of folders a step changed.
forge_pool_dir_modes() {
	local mode
	mode=$(umask) || return 1
	mode=$(printf '%o' "$((0777 & ~0$mode))") || return 1
	set -- -path ./.git
	forge_list=${forge_isolated_keep:-}
	while forge_list_next; do
		set -- "$@" -o -path "./$forge_item"
	done
	(cd -P -- "$forge_copy_dir" &&
		exec find . \( "$@" \) -prune -o -type d ! -perm "$mode" -exec chmod "$mode" {} +)
}

# forge_pool_clean INDEX [--exclude=/KEEP...]: removes every untracked file
# of the slot's copy (by the slot's index INDEX), ignored ones too but those
# in the keep paths. Only ignored files are kept there: a keep path that is
# not ignored (a tracked folder, say) would otherwise carry an earlier run's
# untracked files into this one.
forge_pool_clean() {
	local index="$1"
	shift
	if [ "$#" -gt 0 ]; then
		forge_index_git "$index" '' "$forge_copy_dir" clean -ffdq >/dev/null 2>&1 || return 1
	fi
	forge_index_git "$index" '' "$forge_copy_dir" clean -ffdxq "$@" >/dev/null 2>&1
}

# forge_pool_keep_check: a keep path (or a folder on its way) that is a
# symbolic link or not a folder is removed, never followed, and the slot's
# setup is run again. Runs before the reset's checkout, which restores what
# of it HEAD tracks.
forge_pool_keep_check() {
	local at left sub
	forge_list=${forge_isolated_keep:-}
	while forge_list_next; do
		sub=
		left=$forge_item/
		while [ -n "$left" ]; do
			sub=$sub${left%%/*}
			left=${left#*/}
			at=$forge_copy_dir/$sub
			if forge_path_exists "$at" && ! forge_is_real_dir "$at"; then
				forge_rm_tree "$at" || forge_die 73 "cannot remove $at"
				rm -f -- "$forge_pool_state/setup"
				break
			fi
			sub=$sub/
		done
	done
}

# forge_pool_release: unlocks the slot. Safe to call when none is held.
forge_pool_release() {
	[ -n "${forge_pool_held:-}" ] || return 0
	forge_copy_scan_reap
	forge_pool_held=
	exec 9>&-
}
