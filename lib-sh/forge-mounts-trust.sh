# forge-mounts-trust.sh — what the mount plan (forge-mounts.sh) may trust
# (SPEC 4.2): a folder reached only through what the invoker or root owns,
# no read-write mount holding forge's own state for the sandbox, and for an
# isolated copy nothing of the source worktree or its git dirs.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_mounts_scratch_allowed PATH [CONFIGURED]: true when the scratch dir
# PATH (canonical; CONFIGURED is the path as configured, which PATH resolves)
# may be mounted read-write. Like a custom mount, it may not be "/", nor
# $HOME or a folder containing it (keys, tokens), nor contain a reserved path
# (the worktree, the git dirs, .forge, ...), and CONFIGURED must lead only
# through what the invoker or root owns (forge_mounts_owned: a /tmp/opencode
# another user planted); otherwise it is skipped with a warning. Leaves
# forge_canon set to PATH.
forge_mounts_scratch_allowed() {
	local path
	if [ "$1" = / ]; then
		forge_warn "sandbox.scratchDir: / is the whole host; not mounted"
		return 1
	fi
	if [ -n "${HOME:-}" ] && forge_canon_dir "$HOME" && forge_path_within "$forge_canon" "$1"; then
		forge_canon=$1
		forge_warn "sandbox.scratchDir: $1 is or contains \$HOME; not mounted"
		return 1
	fi
	forge_canon=$1
	while IFS= read -r path; do
		if [ -n "$path" ] && forge_path_within "$path" "$1"; then
			forge_warn "sandbox.scratchDir: $1 contains the reserved path $path; not mounted"
			return 1
		fi
	done <<EOF
$forge_mounts_reserved
EOF
	forge_mounts_owned "${2:-$1}" sandbox.scratchDir
}

# forge_mounts_owned PATH WHERE: true when PATH, a folder to be mounted (or
# made, then mounted), is the invoker's or root's, and so is every symbolic
# link on the way to it: otherwise another user chooses what the sandbox
# sees, or reads and plants what it writes (a /tmp/opencode planted as a
# link to /root, or as a folder of their own). The links are those the
# kernel follows (forge_path_walk), then the folder they lead to; for a
# folder not made yet, the nearest one that exists, where it would be made.
# Otherwise warns, naming WHERE and the owner, and returns 1.
forge_mounts_owned() {
	local link me owner
	me=$(id -u)
	if ! forge_path_walk "$1"; then
		forge_warn "$2: cannot resolve $1 (a symbolic link loop?); not mounted"
		return 1
	fi
	while IFS= read -r link; do
		[ -n "$link" ] || continue
		if ! owner=$(forge_mounts_owner_of "$link"); then
			forge_warn "$2: cannot tell who owns the symbolic link $link on the way to $1; not mounted"
			return 1
		fi
		if [ "${owner%% *}" != "$me" ] && [ "${owner%% *}" != 0 ]; then
			forge_warn "$2: $1 goes through the symbolic link $link, owned by ${owner#* }, not by you or root; not mounted"
			return 1
		fi
	done <<EOF
$forge_walk_links
EOF
	if ! owner=$(forge_mounts_owner_of "$forge_walk_dir"); then
		forge_warn "$2: cannot tell who owns $forge_walk_dir; not mounted"
		return 1
	fi
	if [ "${owner%% *}" = "$me" ] || [ "${owner%% *}" = 0 ]; then
		return 0
	fi
	if [ "$forge_walk_dir" = "$1" ]; then
		forge_warn "$2: $1 is owned by ${owner#* }, not by you or root; not mounted"
	else
		forge_warn "$2: $1 leads to $forge_walk_dir, owned by ${owner#* }, not by you or root; not mounted"
	fi
	return 1
}

# forge_path_walk PATH: follows the absolute PATH as the kernel does, one
# symbolic link at a time, changing nothing. Sets forge_walk_links to every
# link on the way (one per line, each a physical path), forge_walk_dir to
# the deepest existing folder reached (physical) and forge_walk_rest to what
# of PATH is left below it (empty when PATH exists). Returns 1 on a link that
# cannot be read, or after 40 links (a loop).
forge_path_walk() {
	local comp hops link rest
	rest=$1 hops=0 forge_walk_links='' forge_walk_dir=''
	while [ -n "$rest" ]; do
		comp=${rest%%/*}
		case $rest in */*) rest=${rest#*/} ;; *) rest= ;; esac
		case $comp in
		'' | .) continue ;;
		..) forge_walk_dir=${forge_walk_dir%/*}; continue ;;
		esac
		if [ -L "$forge_walk_dir/$comp" ]; then
			forge_walk_links=$forge_walk_links$forge_walk_dir/$comp'
'
			hops=$((hops + 1))
			[ "$hops" -le 40 ] || return 1
			# The "." keeps a target that ends in a newline whole.
			link=$(readlink -- "$forge_walk_dir/$comp" && echo .) || return 1
			link=${link%??}
			case $link in /*) forge_walk_dir= ;; esac
			rest=$link/$rest
		elif [ -d "$forge_walk_dir/$comp" ]; then
			forge_walk_dir=$forge_walk_dir/$comp
		else
			rest=$comp/$rest
			break
		fi
	done
	forge_walk_rest=${rest%/}
	[ -n "$forge_walk_dir" ] || forge_walk_dir=/
}

# forge_mounts_owner_of PATH: prints "UID WHO": the owner of PATH itself
# (a symbolic link is not followed) and how a message names it, "name (uid
# N)" or "uid N". Returns 1 when stat cannot tell.
forge_mounts_owner_of() {
	local ids uid name
	ids=$(stat -c '%u %U' -- "$1" 2>/dev/null) || ids=$(stat -f '%u %Su' -- "$1" 2>/dev/null) || return 1
	uid=${ids%% *} name=${ids#* }
	# Shown in a warning: a name that is no plain one (or GNU stat's
	# UNKNOWN, for a uid without a passwd entry) is left out.
	case $name in
	'' | UNKNOWN | *[!A-Za-z0-9._-]*) name="uid $uid" ;;
	*) name="$name (uid $uid)" ;;
	esac
	printf '%s %s\n' "$uid" "$name"
}

# forge_mounts_state_check ROOT NAME: exits 73, naming both paths, when a
# read-write mount of the plan (forge_mounts, for the worktree at ROOT) holds
# or lies in forge's own state for sandbox NAME, which no sandbox may write:
# the namespace sandbox's state folder (its exec socket and env file: a
# sandbox that rewrote them would pass itself host variables, or answer for
# itself with a fake server), and for a root invoker the folder its private
# folders live in; forge's registry of sandboxes (and the bring-up locks);
# anything else in forge's state folder (other sandboxes' sockets and
# secrets); with msb, msb's own state folder (its record of every sandbox's
# mounts). The worktree at $HOME, an XDG_STATE_HOME inside the worktree, a
# read-write custom mount or scratch dir around it are such plans. (The
# record in ROOT/.forge/sandbox is inside the read-only .forge.) Paths are
# compared canonical, as the mounts are, and a symbolic link on the way to
# one of them may not lie in a read-write mount either.
forge_mounts_state_check() {
	local entry line links list path what state_dir mount link
	forge_xdg_dir state || forge_xdg=/nonexistent/.local/state
	state_dir=$forge_xdg/forge
	forge_bwrap_state "$2"
	forge_sandbox_registry "$2"
	list="the state folder of sandbox $2 (its exec socket and env file)	$forge_bwrap_dir
"
	if [ "${forge_mounts_backend:-msb}" = bwrap ]; then
		forge_bwrap_owner "$1"
		[ "$forge_bwrap_data" = "$forge_bwrap_dir" ] ||
			list="${list}the private folders of sandbox $2	$forge_bwrap_data
"
	fi
	list="${list}forge's registry of sandboxes	$forge_sandbox_registry_dir
forge's state folder	$state_dir
"
	[ "${forge_mounts_backend:-msb}" = bwrap ] ||
		list="${list}msb's state folder	${MSB_HOME:-${HOME:-/nonexistent}/.microsandbox}
"
	while [ -n "$list" ]; do
		entry=${list%%'
'*}
		list=${list#*'
'}
		what=${entry%%'	'*} path=${entry#*'	'}
		# Where the kernel finds it: the folder, and every symbolic link on
		# the way (a sandbox that can replace one chooses the folder).
		# (A loop leaves the path as it is, and the links met until then.)
		if forge_path_walk "$path"; then
			path=${forge_walk_dir%/}/$forge_walk_rest
			path=${path%/}
		fi
		links=$forge_walk_links
		while IFS= read -r line; do
			[ "${line%% *}" = rw ] || continue
			mount=${line#* }
			if forge_path_within "$path" "$mount" || forge_path_within "$mount" "$path"; then
				forge_die 73 "cannot mount $mount read-write: it holds $what, $path, which no sandbox may write (set XDG_STATE_HOME, or MSB_HOME, outside every writable mount)"
			fi
			while IFS= read -r link; do
				if [ -n "$link" ] && forge_path_within "$link" "$mount"; then
					forge_die 73 "cannot mount $mount read-write: it holds $link, a symbolic link on the way to $what, $path, which no sandbox may write (set XDG_STATE_HOME, or MSB_HOME, outside every writable mount)"
				fi
			done <<EOF
$links
EOF
		done <<EOF
$forge_mounts
EOF
	done
}

# forge_mounts_hidden_set [SOURCE]: sets forge_mounts_hidden to the paths a
# copy's sandbox must not see, one per line: the source worktree SOURCE and
# its git dir and common dir (canonical). Empty without a SOURCE.
forge_mounts_hidden_set() {
	forge_mounts_hidden=
	[ -n "${1:-}" ] || return 0
	forge_mounts_hidden=$1'
'
	forge_git_common_dir "$1" || forge_die 69 "cannot find the git common dir of $1"
	forge_canon_dir "$forge_git_dir" || forge_die 69 "cannot resolve the git dir $forge_git_dir"
	forge_mounts_hidden=$forge_mounts_hidden$forge_canon'
'
	forge_canon_dir "$forge_common_dir" || forge_die 69 "cannot resolve the git dir $forge_common_dir"
	forge_mounts_hidden=$forge_mounts_hidden$forge_canon'
'
}

# forge_path_overlaps PATH LIST: true when PATH is, holds or lies in one of
# the paths of LIST (each ended by a newline); forge_overlap is then the
# first such path.
forge_path_overlaps() {
	local rest
	rest=$2
	while [ -n "$rest" ]; do
		forge_overlap=${rest%%'
'*}
		rest=${rest#*'
'}
		if forge_path_within "$1" "$forge_overlap" || forge_path_within "$forge_overlap" "$1"; then
			return 0
		fi
	done
	return 1
}

# forge_mounts_hidden_ok PATH WHAT: true when PATH (canonical) neither is,
# holds nor lies in a hidden path; otherwise warns (naming WHAT) and returns 1.
forge_mounts_hidden_ok() {
	forge_path_overlaps "$1" "${forge_mounts_hidden:-}" || return 0
	forge_warn "$2: $1 is not mounted in the sandbox of an isolated copy: it would show the real worktree or its repository ($forge_overlap)"
	return 1
}
