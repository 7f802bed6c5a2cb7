# forge-mounts-git.sh — the mount plan's (forge-mounts.sh) git dirs and the
# folders the sandbox must see but never write (SPEC 4.2): the git dirs, with
# what decides what the host's git reads kept read-only where the backend
# can, the hooks dir, a core.hooksPath folder and the worktree's .forge.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_mounts_git COMMON GITDIR [create]: offers the git dirs (canonical):
# COMMON, the common dir, and GITDIR, the worktree's own (COMMON itself, or
# a linked worktree's COMMON/worktrees/NAME). What in a git dir decides
# which config, hooks, object stores or repository the host's git reads
# (config, commondir, objects/info/alternates, info/, hooks/, ...:
# gitrepository-layout(5), listed in forge-sandbox(1)) must not be
# writable inside, nor creatable where it does not exist: so the root of
# COMMON is read-only, with what git writes when it commits writable inside
# it (objects/, refs/, logs/, reftable/ and GITDIR), and objects/info
# read-only again. msb cannot mount a folder read-write inside a read-only
# one (the outer flag wins, so commits would fail everywhere): with msb the
# git dirs stay read-write as a whole, a limit forge-sandbox(1) states.
# Exits 73 when one of those folders is a symbolic link or cannot be made.
forge_mounts_git() {
	local sub
	if [ "${forge_mounts_backend:-msb}" != bwrap ]; then
		# Shortest first, so the common dir covers a git dir inside it.
		if [ "${#1}" -le "${#2}" ]; then
			forge_mounts_candidate rw "$1" 'git common dir'
			forge_mounts_candidate rw "$2" 'git dir'
		else
			forge_mounts_candidate rw "$2" 'git dir'
			forge_mounts_candidate rw "$1" 'git common dir'
		fi
		return 0
	fi
	forge_mounts_candidate ro "$1" 'git common dir'
	for sub in objects refs logs reftable; do
		[ "$sub" != reftable ] || [ -d "$1/reftable" ] || continue
		forge_mounts_git_folder rw "$1/$sub" "${3:-}"
	done
	forge_mounts_git_folder ro "$1/objects/info" "${3:-}"
	[ "$2" = "$1" ] || forge_mounts_git_folder rw "$2" "${3:-}"
}

# forge_mounts_git_folder FLAG PATH [create]: PATH, a folder of a git dir
# whose root is mounted read-only, mounted FLAG on top of it (the one place
# a mount nests read-write inside read-only: for the namespace backend,
# which can). A missing one is created (with create; plan only checks that
# it could be): the mount point must exist before the read-only root is
# mounted. Exits 73 for a symbolic link, a non-folder or a failed mkdir.
forge_mounts_git_folder() {
	if [ -L "$2" ] || { [ -e "$2" ] && [ ! -d "$2" ]; }; then
		forge_die 73 "cannot mount the git dir's $2: it is not a folder (refusing to mount it)"
	fi
	if [ ! -d "$2" ]; then
		if [ "${3:-}" = create ]; then
			mkdir -- "$2" 2>/dev/null || [ -d "$2" ] || forge_die 73 "cannot create $2, which the sandbox must see"
			[ ! -L "$2" ] || forge_die 73 "cannot mount the git dir's $2: it is not a folder (refusing to mount it)"
		elif [ ! -w "${2%/*}" ]; then
			forge_die 73 "cannot create $2, which the sandbox must see"
		fi
	fi
	forge_mounts_reserved=$forge_mounts_reserved$2'
'
	forge_mounts=$forge_mounts$1' '$2'
'
	forge_mounts_why="${forge_mounts_why}git dir folder
"
}

# forge_mounts_protect PATH WHAT [create]: offers PATH, a folder the
# sandbox must see and never write (the hooks dir, the worktree's .forge), as
# a read-only mount, whether it exists or not: a missing one is created empty
# (with "create", by up; plan only checks that it could be). Its parent is
# canonical. Exits 73 when PATH cannot be protected: a symbolic link (the
# sandbox could swap it for a folder of its own), something that is not a
# folder, or a folder that cannot be created.
forge_mounts_protect() {
	if [ -L "$1" ]; then
		forge_die 73 "cannot protect the $2 $1: it is a symbolic link (refusing to mount it)"
	fi
	if [ ! -d "$1" ]; then
		[ ! -e "$1" ] || forge_die 73 "cannot protect the $2 $1: it is not a folder"
		if [ "${3:-}" = create ]; then
			mkdir -- "$1" 2>/dev/null || [ -d "$1" ] ||
				forge_die 73 "cannot create the $2 $1, which the sandbox must see read-only"
			[ ! -L "$1" ] || forge_die 73 "cannot protect the $2 $1: it is a symbolic link (refusing to mount it)"
		elif [ ! -w "${1%/*}" ]; then
			forge_die 73 "cannot create the $2 $1, which the sandbox must see read-only"
		fi
	fi
	forge_mounts_must "$1" "$2"
	forge_mounts_candidate ro "$1" "$2"
}

# forge_mounts_hooks_path ROOT [create]: when core.hooksPath (any scope)
# names a folder inside a read-write mount (".githooks" or husky's
# ".husky/_" in the worktree), that folder is where the host's git runs
# hooks from: it is protected like the hooks dir (created empty by up when
# missing). Elsewhere the sandbox cannot see it.
forge_mounts_hooks_path() {
	local hooks line rest
	# forge_git sets core.hooksPath on the command line, which comes last:
	# the value before it is the repository's own.
	hooks=$(forge_git -C "$1" config --path --get-all core.hooksPath 2>/dev/null) || return 0
	case $hooks in *'
'*) ;; *) return 0 ;; esac
	hooks=${hooks%'
'*}
	hooks=${hooks##*'
'}
	case $hooks in '') return 0 ;; /*) ;; *) hooks=$1/$hooks ;; esac
	forge_canon_future "$hooks" || return 0
	hooks=$forge_canon
	rest=$forge_mounts
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		{ [ "${line%% *}" = rw ] && forge_path_within "$hooks" "${line#* }"; } || continue
		if [ "${2:-}" = create ] && [ ! -e "$hooks" ] && [ ! -L "$hooks" ]; then
			mkdir -p -- "${hooks%/*}" 2>/dev/null || :
		fi
		forge_mounts_protect "$hooks" 'git hooks dir (core.hooksPath)' "${2:-}"
		return 0
	done
}
