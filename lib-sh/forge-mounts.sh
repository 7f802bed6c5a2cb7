# forge-mounts.sh — the sandbox's mount plan (SPEC 4.2): which host folders
# the sandbox sees, read-write or read-only, at the identical path. Every
# host path is canonical (msb refuses symlinks), and a path the selected
# backend cannot express is never passed on: msb's "-v SRC:DEST[:OPTS]"
# syntax cannot carry ':', ',' or a newline; bwrap takes any path but one
# with a newline, which the plan's lines cannot carry.
# The git dirs and the protected folders are planned in forge-mounts-git.sh.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_path_unsafe PATH: true when the backend the plan is for
# (forge_mounts_backend, msb unless it is bwrap) cannot mount PATH: for msb, one
# with ':', ',' or a newline; for bwrap, one with a newline (the plan and the
# bwrap argv are lines). Sets forge_path_why to the reason.
forge_path_unsafe() {
	case $1 in
	*'
'*) forge_path_why="a path containing a newline cannot be mounted (forge's mount plan is line-based)"; return 0 ;;
	esac
	[ "${forge_mounts_backend:-msb}" != bwrap ] || return 1
	case $1 in
	*[:,]*) forge_path_why="msb's -v syntax cannot express a path containing ':' or ','"; return 0 ;;
	esac
	return 1
}

# forge_path_within A B: true when path A equals B or lies inside it (both
# canonical, absolute).
forge_path_within() {
	[ "$1" = "$2" ] && return 0
	[ "$2" = / ] && return 0
	case $1 in "$2"/*) return 0 ;; esac
	return 1
}

# forge_canon_dir DIR: sets forge_canon to the physical absolute path of the
# existing directory DIR. Returns 1 when DIR is not one.
forge_canon_dir() {
	[ -d "$1" ] || return 1
	# The trailing "." keeps a path that ends in a newline intact.
	forge_canon=$(CDPATH='' cd -P -- "$1" && pwd -P && echo .) || return 1
	forge_canon=${forge_canon%.}
	forge_canon=${forge_canon%?}
}

# forge_canon_future DIR: like forge_canon_dir, for a directory that may not
# exist yet: its nearest existing ancestor made physical, plus the rest.
# Returns 1 when DIR is relative or its missing part has "." or "..".
forge_canon_future() {
	local head rest
	rest=
	head=$1
	while :; do
		case $head in
		/) break ;;
		*/) head=${head%/} ;;
		*) break ;;
		esac
	done
	case $head in /*) ;; *) return 1 ;; esac
	while [ ! -d "$head" ]; do
		case ${head##*/} in . | .. | '') return 1 ;; esac
		rest=/${head##*/}$rest
		head=${head%/*}
		[ -n "$head" ] || head=/
	done
	forge_canon_dir "$head" || return 1
	[ -z "$rest" ] || forge_canon=${forge_canon%/}$rest
}

# forge_mounts_candidate FLAG PATH WHAT: offers one of forge's own mounts
# (SPEC 4.2 items 1-6) in priority order. PATH is canonical; FLAG is rw or
# ro. Against the mounts accepted so far: covered with the same flag, it is
# skipped silently; a read-only mount strictly inside a read-write one is
# kept; any other overlap with a different flag drops it with a warning.
# Every candidate is reserved: no custom mount may overlap it.
forge_mounts_candidate() {
	local flag line path rest
	forge_mounts_reserved=$forge_mounts_reserved$2'
'
	rest=$forge_mounts
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		flag=${line%% *}
		path=${line#* }
		if forge_path_within "$2" "$path"; then
			[ "$flag" != "$1" ] || return 0
			if [ "$1" = ro ] && [ "$2" != "$path" ]; then
				continue
			fi
		elif forge_path_within "$path" "$2"; then
			[ "$flag" != "$1" ] || continue
		else
			continue
		fi
		forge_warn "not mounting $3 $2 ($1): it overlaps the $flag mount $path"
		return 0
	done
	forge_mounts=$forge_mounts$1' '$2'
'
	forge_mounts_why=$forge_mounts_why$3'
'
}

# forge_mounts_custom FLAG PATH WHERE EARLIER: offers a sandbox.mounts or
# loop.allowExternalDirectories entry (WHERE names the key). EARLIER holds
# the custom mounts accepted before it, one "explicit PATH" (sandbox.mounts)
# or "external PATH" (loop.allowExternalDirectories) line each. It must be
# an absolute, existing directory that msb can express, reached only through
# what the invoker or root owns (forge_mounts_owned), and must not equal,
# contain or sit inside a reserved path or an earlier accepted entry;
# otherwise it is skipped with a warning naming the reason (silently for an
# external dir an explicit entry already mounts). Returns 0 when it is
# mounted, with forge_canon its canonical path, 1 when it is skipped.
forge_mounts_custom() {
	local line path rest
	case $2 in
	'') forge_warn "$3: no host path; skipped"; return 1 ;;
	/*) ;;
	*) forge_warn "$3: $2 is not an absolute path; skipped"; return 1 ;;
	esac
	if forge_path_unsafe "$2"; then
		forge_warn "$3: $2: $forge_path_why; skipped"
		return 1
	fi
	if ! forge_canon_dir "$2"; then
		forge_warn "$3: $2 is not an existing directory; skipped"
		return 1
	fi
	if forge_path_unsafe "$forge_canon"; then
		forge_warn "$3: $2 resolves to $forge_canon: $forge_path_why; skipped"
		return 1
	fi
	forge_mounts_hidden_ok "$forge_canon" "$3" || return 1
	forge_mounts_owned "$2" "$3" || return 1
	if forge_path_overlaps "$forge_canon" "$forge_mounts_reserved"; then
		forge_warn "$3: $forge_canon overlaps the reserved path $forge_overlap; skipped"
		return 1
	fi
	rest=$4
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		path=${line#* }
		if [ "$forge_canon" = "$path" ] && [ "${line%% *}" = explicit ] &&
			[ "${3%%\[*}" = loop.allowExternalDirectories ]; then
			# An explicit sandbox.mounts entry wins over the same directory here.
			return 1
		fi
		if forge_path_within "$forge_canon" "$path" || forge_path_within "$path" "$forge_canon"; then
			forge_warn "$3: $forge_canon overlaps the earlier mount $path; skipped"
			return 1
		fi
	done
	forge_mounts=$forge_mounts$1' '$forge_canon'
'
	forge_mounts_why=$forge_mounts_why$3'
'
}

# forge_mounts_must PATH WHAT: exits 65 when PATH, one of the mounts the
# sandbox cannot work without, is one the backend cannot mount.
forge_mounts_must() {
	forge_path_unsafe "$1" || return 0
	forge_die 65 "cannot mount $2 $1: $forge_path_why"
}

# forge_mounts_optional PATH WHAT: true when PATH can be mounted; warns and
# returns 1 when the backend cannot mount it.
forge_mounts_optional() {
	forge_path_unsafe "$1" || return 0
	forge_warn "not mounting $2 $1: $forge_path_why"
	return 1
}

# forge_mounts_plan ROOT BACKEND [create [SOURCE [STORES]]]: sets forge_mounts
# to the mounts of a sandbox on BACKEND (msb or bwrap; kept in
# forge_mounts_backend while the plan is made, for the rules that differ)
# for the worktree at ROOT (canonical), one "rw PATH" or "ro PATH" line each,
# in the order they must be given (a later mount lies on top of an earlier
# one). Reads the configuration keys forge_plan extracted
# (forge_sandbox_cfg, forge-plan.jq's mount_config). The plan is data, one for every backend that can
# mount what it says: each renderer turns it into its own flags; where msb
# cannot nest a read-write mount in a read-only one, the git dirs are
# planned as msb mounts them (forge_mounts_git). With "create", a missing
# hooks dir, .forge, git folder or scratch directory is created (up);
# without, nothing on disk changes (plan). Exits 65 when the worktree or a
# git dir cannot be mounted or its commondir is refused, 73 when the hooks
# dir, .forge or a git folder cannot be protected.
# With a SOURCE worktree (forge-verify --isolated --sandbox; its paths kept
# in forge_mounts_hidden), ROOT is an isolated copy of that worktree: the
# copy takes the worktree's place, the object stores STORES lists, one a
# line (those forge_copy_repo recorded)
# are mounted read-only, and nothing that is, holds or lies in the source
# worktree or its git dirs is mounted at all.
forge_mounts_plan() {
	local common_dir custom dir flag gitdir line project projro rest
	forge_mounts_backend=$2
	forge_mounts='' forge_mounts_why='' forge_mounts_reserved=''
	forge_mounts_hidden_set "${4:-}"
	forge_mounts_must "$1" worktree
	forge_mounts_candidate rw "$1" worktree

	# The git dir and the common dir (for a linked worktree both lie outside
	# it), found once, with a planted commondir refused (forge_git_dir_check).
	forge_git_common_dir "$1" || forge_die 69 "cannot find the git common dir of $1"
	forge_canon_dir "$forge_git_dir" || forge_die 69 "cannot resolve the git dir $forge_git_dir"
	gitdir=$forge_canon
	forge_canon_dir "$forge_common_dir" || forge_die 69 "cannot resolve the git dir $forge_common_dir"
	common_dir=$forge_canon
	forge_mounts_must "$gitdir" 'git dir'
	forge_mounts_must "$common_dir" 'git common dir'
	forge_mounts_git "$common_dir" "$gitdir" "${3:-}"

	# Hooks read-only, always: nothing in the sandbox may plant a hook the
	# host's git runs. The evidence forge-verify gates on, read-only too:
	# the agent it gates must not reset its own breaker.
	forge_mounts_protect "$common_dir/hooks" 'git hooks dir' "${3:-}"
	forge_mounts_hooks_path "$1" "${3:-}"
	if [ "${3:-}" = create ] && [ ! -e "$1/.forge" ] && ! forge_exclude_forge_dir "$1"; then
		forge_warn "cannot add /.forge/ to the repository's info/exclude"
	fi
	forge_mounts_protect "$1/.forge" 'evidence dir' "${3:-}"
	[ -z "${4:-}" ] || forge_mounts_borrowed "${5:-}"

	# The project read-only: it always holds the read-write git common dir
	# (<project>/.git), and msb cannot mount a folder read-only around a
	# read-write one (the outer flag wins), so with msb it is never mounted;
	# the git dir gives the sandbox the project's history. The plan keeps it
	# in forge_mounts_project_held for a backend that can (and for up's note).
	forge_mounts_project_held='' forge_mounts_project_holds=
	projro=
	! forge_sandbox_cfg_value projro || projro=$forge_cfg_val
	project=${common_dir%/.git}
	if [ "$projro" != false ] && forge_mounts_project "$common_dir" &&
		[ "$project" != "$1" ] && forge_mounts_optional "$project" 'project'; then
		if forge_mounts_holds_rw "$project"; then
			forge_mounts_reserved=$forge_mounts_reserved$project'
'
			forge_mounts_project_held=$project
		else
			forge_mounts_candidate ro "$project" project
		fi
	fi

	if forge_sandbox_cfg_value toolout; then
		dir=$forge_cfg_val
	else
		forge_xdg_dir data || forge_xdg=/nonexistent/.local/share
		dir=$forge_xdg/opencode/tool-output
	fi
	if [ -n "$dir" ] && forge_mounts_absolute "$dir" sandbox.toolOutputDir &&
		forge_canon_dir "$dir" && ! forge_path_within "$forge_canon" "$1" &&
		forge_mounts_hidden_ok "$forge_canon" sandbox.toolOutputDir &&
		forge_mounts_optional "$forge_canon" 'tool output dir'; then
		forge_mounts_candidate ro "$forge_canon" 'tool output dir'
	fi

	if forge_sandbox_cfg_value scratch; then
		dir=$forge_cfg_val
	else
		dir=${TMPDIR:-/tmp}/opencode
	fi
	if [ -n "$dir" ] && forge_mounts_absolute "$dir" sandbox.scratchDir &&
		forge_canon_future "$dir" && ! forge_path_within "$forge_canon" "$1" &&
		forge_mounts_hidden_ok "$forge_canon" sandbox.scratchDir &&
		forge_mounts_scratch_allowed "$forge_canon" "$dir"; then
		if [ "${3:-}" = create ] && [ ! -d "$dir" ]; then
			mkdir -p -- "$dir" 2>/dev/null ||
				forge_warn "cannot create the scratch dir $dir"
		fi
		if [ "${3:-}" = create ]; then
			forge_canon_dir "$dir" && forge_mounts_scratch_allowed "$forge_canon" "$dir"
		fi && ! forge_path_within "$forge_canon" "$1" &&
			forge_mounts_optional "$forge_canon" 'scratch dir' &&
			forge_mounts_candidate rw "$forge_canon" 'scratch dir'
	fi

	# Custom mounts: explicit ones first, so they win over the external dirs.
	# custom: those accepted, "explicit PATH" or "external PATH" lines.
	custom=
	rest=$forge_sandbox_cfg
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		forge_sandbox_cfg_split "$line"
		case $forge_cfg_tag/$forge_cfg_key in
		mount_ro/*) flag=ro ;;
		mount_rw/*) flag=rw ;;
		X/mount_*) forge_warn "$forge_cfg_val: contains a newline, which cannot be mounted (the mount plan is line-based); skipped"; continue ;;
		*) continue ;;
		esac
		forge_mounts_custom "$flag" "$forge_cfg_val" "$forge_cfg_key" "$custom" || continue
		custom=${custom}explicit' '$forge_canon'
'
	done
	rest=$forge_sandbox_cfg
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		forge_sandbox_cfg_split "$line"
		case $forge_cfg_tag/$forge_cfg_key in
		ext/*) ;;
		X/ext) forge_warn "$forge_cfg_val: contains a newline, which cannot be mounted (the mount plan is line-based); skipped"; continue ;;
		*) continue ;;
		esac
		forge_mounts_custom ro "$forge_cfg_val" "$forge_cfg_key" "$custom" || continue
		custom=${custom}external' '$forge_canon'
'
	done
	return 0
}

# forge_mounts_holds_rw PATH: true when an accepted read-write mount lies
# inside PATH (or is PATH); sets forge_mounts_project_holds to the first.
forge_mounts_holds_rw() {
	local line rest
	rest=$forge_mounts
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		[ "${line%% *}" = rw ] || continue
		if forge_path_within "${line#* }" "$1"; then
			forge_mounts_project_holds=${line#* }
			return 0
		fi
	done
	return 1
}

# forge_mounts_absolute PATH KEY: true for an absolute PATH; warns otherwise.
forge_mounts_absolute() {
	case $1 in /*) return 0 ;; esac
	forge_warn "$2: $1 is not an absolute path; not mounted"
	return 1
}

# forge_mounts_project COMMON: true when the git common dir COMMON
# (canonical) has a source project, the main worktree of the repository,
# found as git finds it: COMMON without its trailing "/.git", a folder.
# False when there is none: a bare repository, or a git dir not named .git
# (git itself cannot tell where that repository's main worktree is).
forge_mounts_project() {
	local bare
	case $1 in */?*/.git) ;; *) return 1 ;; esac
	bare=$(forge_git --git-dir="$1" config --bool core.bare 2>/dev/null) || bare=false
	[ "$bare" != true ] || return 1
	[ -d "${1%/.git}" ]
}

# --- the plan of an isolated copy (forge-verify --isolated --sandbox) ----------

# forge_mounts_borrowed STORES: offers, read-only, the object stores an
# isolated copy borrows, as forge_copy_repo recorded them when it wrote the
# copy's alternates (forge_copy_stores, one canonical path a line): git in
# the copy reads its history there, and nothing else of the source is seen.
# Never a store read back from an alternates file: the sandbox of the
# source's worktree could have written the source's, and the copy's own is
# in its read-write mount.
forge_mounts_borrowed() {
	local path rest
	rest=$1
	while [ -n "$rest" ]; do
		path=${rest%%'
'*}
		rest=${rest#*'
'}
		forge_canon_dir "$path" || continue
		forge_mounts_optional "$forge_canon" 'object store' || continue
		forge_mounts_candidate ro "$forge_canon" 'object store'
	done
	return 0
}
