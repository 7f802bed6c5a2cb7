# forge-git.sh — the git plumbing forge relies on. Every git command forge
# runs goes through forge_git, so no repository hook ever runs because of
# forge and no read takes an optional lock. Part of forge.sh; source that,
# not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_git ARG...: git with hooks disabled and without optional locks: a
# read such as "git diff HEAD" on the user's repository never refreshes (and
# so never locks or rewrites) its index (SPEC section 2). Commands that must
# write still take their locks. No fsmonitor hook (a program that
# core.fsmonitor names, which git runs for diff or ls-files) and no pager
# (git diff starts one on a terminal) runs because of forge either.
# forge_git --exec ARG...: the same git replaces the shell, for a whole
# $(...) or pipeline element only, where a function call costs a process of
# its own (a reused run counts them: bench/reuse.sh).
forge_git() {
	local run
	run=${1-}
	[ "$run" != --exec ] || shift
	set -- --no-pager --no-optional-locks -c core.hooksPath=/dev/null -c core.fsmonitor=false "$@"
	[ "$run" != --exec ] || forge_git_exec "$@"
	git "$@"
}

# forge_git_exec ARG...: replaces the shell with git ARG..., git found as
# forge_find_program finds it: the exec builtin's own PATH search would try
# (and fail on) every folder before git's.
forge_git_exec() {
	! forge_find_program git || exec "$forge_program" "$@"
	exec git "$@"
}

# forge_repo_root [DIR]: sets forge_root to the top of the worktree that
# contains DIR (default: the current directory), forge_git_dir and
# forge_common_dir as forge_git_common_dir does (which refuses a planted
# commondir), and, as forge_head would, forge_head, all from one git
# process. Returns 1 when DIR is not inside a git worktree (bare
# repositories and .git dirs included).
forge_repo_root() {
	local out status
	forge_head_of=
	# --verify -q fails (1) without a commit, after printing the other three.
	status=0
	out=$(forge_git --exec -C "${1:-.}" rev-parse --show-toplevel --absolute-git-dir --git-common-dir \
		--verify -q 'HEAD^{commit}' 2>/dev/null) || status=$?
	case $status:$out in
	0:*'
'*'
'*'
'*)
		forge_head=${out##*'
'}
		out=${out%'
'*} ;;
	1:*'
'*'
'*) forge_head= ;;
	*) return 1 ;;
	esac
	forge_root=${out%%'
'*}
	forge_common_dir=${out##*'
'}
	forge_git_dir=${out#*'
'}
	forge_git_dir=${forge_git_dir%'
'*}
	case $forge_root$forge_git_dir in
	'' | *'
'*)
		# A path with a newline in it: ask for each on its own.
		forge_root=$(forge_git -C "${1:-.}" rev-parse --show-toplevel) || return 1
		[ -n "$forge_root" ] || return 1
		forge_common_dir=
		forge_git_common_dir "$forge_root" || return 1
		forge_head "$forge_root"
		return 0
		;;
	esac
	forge_git_dirs_physical "${1:-.}" || return 1
	forge_common_of=$forge_root
	forge_head_of=$forge_root
}

# forge_git_common_dir ROOT: sets forge_git_dir to the absolute git dir of
# the worktree at ROOT and forge_common_dir to its absolute git common dir
# (shared by all its linked worktrees), both physical. Returns 1 when git
# finds none. Exits 65 when the git dir got its common dir from a commondir
# file that is not a linked worktree's (forge_git_dir_check).
forge_git_common_dir() {
	local out
	[ "${forge_common_of:-}" != "$1" ] || [ -z "${forge_common_dir:-}" ] || return 0
	out=$(forge_git -C "$1" rev-parse --absolute-git-dir --git-common-dir 2>/dev/null) || return 1
	forge_git_dir=${out%%'
'*}
	forge_common_dir=${out#*'
'}
	case $forge_common_dir in
	*'
'*)
		# A path with a newline in it: ask for each on its own.
		forge_git_dir=$(forge_git -C "$1" rev-parse --absolute-git-dir) || return 1
		forge_common_dir=$(forge_git -C "$1" rev-parse --git-common-dir) || return 1
		;;
	esac
	forge_git_dirs_physical "$1" || return 1
	forge_common_of=$1
}

# forge_git_dirs_physical DIR: makes forge_git_dir and forge_common_dir, as
# git printed them for DIR, physical absolute paths (a relative common dir
# is relative to DIR, as git writes it in .git files), then checks them
# (forge_git_dir_check). Returns 1 when one cannot be entered.
forge_git_dirs_physical() {
	# A relative common dir joined to an absolute DIR (the current
	# directory's PWD for "."), which forge_real_dir then resolves without
	# a subshell when nothing in it needs resolving.
	case $forge_common_dir in
	/*) ;;
	*)
		case $1:${PWD:-} in
		/*) forge_common_dir=$1/$forge_common_dir ;;
		.:/*) forge_common_dir=$PWD/$forge_common_dir ;;
		*) forge_common_dir=$(cd -P -- "$1" && cd -P -- "$forge_common_dir" && pwd -P) || return 1 ;;
		esac
		;;
	esac
	forge_real_dir "$forge_git_dir" || return 1
	forge_git_dir=$forge_real
	forge_real_dir "$forge_common_dir" || return 1
	forge_common_dir=$forge_real
	forge_git_dir_check "$forge_git_dir" "$forge_common_dir"
}

# forge_git_dir_check GITDIR COMMON: the one place forge decides whether the
# common dir git found for GITDIR may be believed. git takes a git dir's
# common dir from its commondir file, which a sandbox with the git dir
# writable could have planted: the host's git would then read the config
# (core.fsmonitor, filters), hooks, objects and refs of a folder the sandbox
# chose, and forge would mount it. Only a linked worktree's git dir,
# COMMON/worktrees/NAME, has a commondir; a repository whose main git dir
# (GITDIR, or COMMON) has one is refused with 65 naming it. (A common dir
# that GIT_COMMON_DIR names is the caller's choice, as it is for git.)
forge_git_dir_check() {
	if forge_path_exists "$2/commondir"; then
		forge_die 65 "refusing the repository of $1: its main git dir has a commondir file, $2/commondir, which points git at another folder's config, hooks and objects (remove it if you did not put it there)"
	fi
	[ "$1" != "$2" ] || return 0
	forge_path_exists "$1/commondir" || return 0
	case ${1#"$2"/worktrees/} in "$1" | '' | */*) ;; *) return 0 ;; esac
	forge_die 65 "refusing the repository of $1: its commondir file, $1/commondir, names $2, which it is no linked worktree of; a main git dir has no commondir (remove it if you did not put it there)"
}

# forge_head ROOT: sets forge_head to the commit at HEAD, or to "" when the
# repository has no commit yet.
forge_head() {
	forge_head=$(forge_git -C "$1" rev-parse -q --verify 'HEAD^{commit}' 2>/dev/null) || forge_head=
	forge_head_of=$1
}

# forge_exclude_forge_dir ROOT: adds /.forge/ to the common dir's info/exclude
# once, so forge's state is never committed nor copied.
forge_exclude_forge_dir() {
	forge_exclude_add "$1" /.forge/
}

# forge_exclude_add ROOT LINE: adds LINE (a pattern of forge's own, such as
# /.forge/) to the info/exclude of ROOT's common dir, once.
forge_exclude_add() {
	local file
	forge_git_common_dir "$1" || return 1
	file=$forge_common_dir/info/exclude
	if [ -f "$file" ] && grep -qxF -e "$2" -- "$file"; then
		return 0
	fi
	[ -d "$forge_common_dir/info" ] || mkdir -p -- "$forge_common_dir/info" || return 1
	# Keep an existing last line intact when it lacks its newline.
	if [ -s "$file" ] && [ -n "$(tail -c 1 -- "$file")" ]; then
		printf '\n' >>"$file" || return 1
	fi
	printf '%s\n' "$2" >>"$file"
}

# --- the caller's git environment -------------------------------------------
# Git exports these to hooks (forge-verify may run from a pre-commit hook),
# and a caller may set them. They decide which repository is the source, as
# they would for git; they never reach a git command that works on a copy,
# nor a step that runs in one.

# forge_git_env_absolute: makes a relative GIT_DIR, GIT_WORK_TREE,
# GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY or GIT_COMMON_DIR absolute where git
# would resolve it, since forge runs git with -C: against the current
# directory, except GIT_INDEX_FILE, which git opens after it moved to the top
# of the worktree (git commit gives a pre-commit hook GIT_INDEX_FILE=.git/index
# when nothing but the index is committed, and the hook may cd into a
# subfolder): that one git resolves itself (rev-parse --git-path index, only
# when it is relative).
forge_git_env_absolute() {
	local cwd index
	# The shell's own PWD is what pwd prints; $(pwd) would cost a process.
	case ${PWD:-} in /*) cwd=$PWD ;; *) cwd=$(pwd) || return 1 ;; esac
	case ${GIT_DIR:-/} in /*) ;; *) GIT_DIR=$cwd/$GIT_DIR ;; esac
	case ${GIT_WORK_TREE:-/} in /*) ;; *) GIT_WORK_TREE=$cwd/$GIT_WORK_TREE ;; esac
	case ${GIT_OBJECT_DIRECTORY:-/} in /*) ;; *) GIT_OBJECT_DIRECTORY=$cwd/$GIT_OBJECT_DIRECTORY ;; esac
	case ${GIT_COMMON_DIR:-/} in /*) ;; *) GIT_COMMON_DIR=$cwd/$GIT_COMMON_DIR ;; esac
	case ${GIT_INDEX_FILE:-/} in
	/*) ;;
	*)
		index=$(forge_git rev-parse --git-path index 2>/dev/null) && [ -n "$index" ] || index=$GIT_INDEX_FILE
		case $index in /*) GIT_INDEX_FILE=$index ;; *) GIT_INDEX_FILE=$cwd/$index ;; esac ;;
	esac
}

# forge_git_env_unset: unsets every variable that points git at a repository
# or changes its configuration (SPEC section 2), so git works on the
# repository of the current directory: the copy.
forge_git_env_unset() {
	local count n
	count=${GIT_CONFIG_COUNT:-0}
	forge_is_uint "$count" || count=0
	[ "${#count}" -le 4 ] || count=10000
	unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
		GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_COMMON_DIR GIT_NAMESPACE \
		GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_QUARANTINE_PATH \
		GIT_SHALLOW_FILE GIT_GRAFT_FILE GIT_REPLACE_REF_BASE GIT_PREFIX
	# GIT_CONFIG_KEY_<n>/GIT_CONFIG_VALUE_<n>, n < GIT_CONFIG_COUNT, go with
	# it (without the count git ignores them; they are unset for tidiness).
	n=0
	while [ "$n" -lt "$count" ]; do
		unset "GIT_CONFIG_KEY_$n" "GIT_CONFIG_VALUE_$n"
		n=$((n + 1))
	done
}

# forge_source_git ROOT ARG...: a read of the source repository at ROOT: the
# caller's environment applies, and git takes no optional lock (it does not
# refresh the index, which a pre-commit hook's commit is still writing).
forge_source_git() {
	local root
	root=$1
	shift
	forge_git --no-optional-locks -C "$root" "$@"
}

# forge_copy_git DIR ARG...: git in the copy at DIR, hooks disabled and the
# caller's git environment unset.
forge_copy_git() {
	local dir="$1"
	shift
	(
		forge_git_env_unset
		exec git --no-pager -c core.hooksPath=/dev/null -c core.fsmonitor=false -C "$dir" "$@"
	)
}

# forge_index_git INDEX OBJECTS DIR ARG...: forge_copy_git with the index
# file INDEX (a scratch index, or a warm slot's own) and, when OBJECTS is not
# empty, new objects written to the folder OBJECTS (the copy's objects, and
# through them the source's, still read).
forge_index_git() {
	local index="$1" objects="$2" dir="$3"
	shift 3
	(
		forge_git_env_unset
		if [ -n "$objects" ]; then
			GIT_INDEX_FILE=$index GIT_OBJECT_DIRECTORY=$objects GIT_ALTERNATE_OBJECT_DIRECTORIES=$dir/.git/objects \
				exec git --no-pager -c core.hooksPath=/dev/null -c core.fsmonitor=false -C "$dir" "$@"
		fi
		GIT_INDEX_FILE=$index exec git --no-pager -c core.hooksPath=/dev/null -c core.fsmonitor=false -C "$dir" "$@"
	)
}
