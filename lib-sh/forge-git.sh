# forge-git.sh — the git plumbing forge relies on. Every git command forge
# runs goes through forge_git, so no repository hook ever runs because of
# forge and no read takes an optional lock. Part of forge.sh; source that,
# not this file.
# shellcheck shell=sh

# forge_git ARG...: git with hooks disabled and without optional locks: a
# read such as "git diff HEAD" on the user's repository never refreshes (and
# so never locks or rewrites) its index (SPEC section 2). Commands that must
# write still take their locks. No fsmonitor hook (a program that
# core.fsmonitor names, which git runs for diff or ls-files) and no pager
# (git diff starts one on a terminal) runs because of forge either.
forge_git() {
	git --no-pager --no-optional-locks -c core.hooksPath=/dev/null -c core.fsmonitor=false "$@"
}

# forge_repo_root [DIR]: sets forge_root to the top of the worktree that
# contains DIR (default: the current directory), and forge_common_dir to its
# absolute git common dir; as forge_head would, forge_head too, from the
# same git process. Returns 1 when DIR is not inside a git worktree (bare
# repositories and .git dirs included).
forge_repo_root() {
	forge_head_of=
	# --verify -q fails (1) without a commit, after printing the other two.
	forge_root_status=0
	forge_root_out=$(forge_git -C "${1:-.}" rev-parse --show-toplevel --git-common-dir \
		--verify -q 'HEAD^{commit}' 2>/dev/null) || forge_root_status=$?
	case $forge_root_status:$forge_root_out in
	0:*'
'*'
'*)
		forge_head=${forge_root_out##*'
'}
		forge_root_out=${forge_root_out%'
'*} ;;
	1:*'
'*) forge_head= ;;
	*) return 1 ;;
	esac
	forge_root=${forge_root_out%'
'*}
	forge_common_dir=${forge_root_out##*'
'}
	case $forge_root in
	'' | *'
'*)
		# A path with a newline in it: ask for each on its own.
		forge_root=$(forge_git -C "${1:-.}" rev-parse --show-toplevel) || return 1
		forge_common_dir=
		forge_git_common_dir "$forge_root" || return 1
		forge_head "$forge_root"
		;;
	*)
		case $forge_common_dir in
		/*) ;;
		# Relative to DIR; made canonical, as git writes it in .git files.
		*) forge_common_dir=$(cd -P -- "${1:-.}" && cd -P -- "$forge_common_dir" && pwd -P) || return 1 ;;
		esac
		;;
	esac
	forge_common_of=$forge_root
	forge_head_of=$forge_root
}

# forge_git_common_dir ROOT: sets forge_common_dir to the absolute git common
# dir of the worktree at ROOT (shared by all its linked worktrees).
forge_git_common_dir() {
	[ "${forge_common_of:-}" != "$1" ] || [ -z "${forge_common_dir:-}" ] || return 0
	forge_common_dir=$(forge_git -C "$1" rev-parse --git-common-dir) || return 1
	case $forge_common_dir in
	/*) ;;
	*) forge_common_dir=$(cd -P -- "$1" && cd -P -- "$forge_common_dir" && pwd -P) || return 1 ;;
	esac
	forge_common_of=$1
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
	forge_git_common_dir "$1" || return 1
	forge_exclude_file=$forge_common_dir/info/exclude
	if [ -f "$forge_exclude_file" ] && grep -qxF -e '/.forge/' -- "$forge_exclude_file"; then
		return 0
	fi
	[ -d "$forge_common_dir/info" ] || mkdir -p -- "$forge_common_dir/info" || return 1
	# Keep an existing last line intact when it lacks its newline.
	if [ -s "$forge_exclude_file" ] && [ -n "$(tail -c 1 -- "$forge_exclude_file")" ]; then
		printf '\n' >>"$forge_exclude_file" || return 1
	fi
	printf '/.forge/\n' >>"$forge_exclude_file"
}
