# forge-copy.sh — the ephemeral copy of the working state for
# forge-verify --isolated (SPEC 3.5). The copy is a repository of its own:
# HEAD checked out in a fresh .git that borrows the source's objects through
# alternates (as git clone --shared does) and holds a copy of its refs and of
# its checkout-relevant config; the uncommitted changes are replayed with git
# apply, the untracked files that are not ignored copied over. Git commands
# in the copy can therefore change nothing of the source: not its refs, stash,
# config, index, hooks or objects, and the copy never shows in its
# git worktree list.
#
# Cold copies live in ${TMPDIR:-/tmp}/forge-verify.XXXXXX/ and are removed
# after the run; warm ones are pooled under
# ${XDG_CACHE_HOME:-$HOME/.cache}/forge/pool/<repo-id>/<slot>/ and reset
# completely before each use. Neither may lie inside the source repository,
# where tools that search parent folders (node_modules, go.work, .git) would
# find the real tree.
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh

# forge_read_file FILE: sets forge_file to FILE's whole content, less its
# final newline (paths in git's files may hold newlines); returns 1 when FILE
# is not a readable regular file (a FIFO would block the read). Builtins only.
forge_read_file() {
	forge_file=
	[ -f "$1" ] && [ -r "$1" ] || return 1
	forge_file_sep=
	while IFS= read -r forge_file_line || [ -n "$forge_file_line" ]; do
		forge_file=$forge_file$forge_file_sep$forge_file_line
		forge_file_sep='
'
	done <"$1"
}

# forge_list_next: takes the first entry off forge_list, a newline-separated
# list (keep paths, setup keys: they hold no newline), into forge_item;
# returns 1 when forge_list is empty. Loop with
#   forge_list=$LIST; while forge_list_next; do ...; done
forge_list_next() {
	[ -n "$forge_list" ] || return 1
	forge_item=${forge_list%%"
"*}
	case $forge_list in
	*'
'*) forge_list=${forge_list#*"
"} ;;
	*) forge_list= ;;
	esac
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

# forge_owner: prints "PID START" identifying this process, for the owner
# file of what it makes (a run folder, a cold copy): see forge_owner_alive.
forge_owner() {
	forge_proc_start "$$"
	printf '%s %s\n' "$$" "$forge_proc_start"
}

# forge_owner_alive FILE [PID]: true while the process that made a folder
# may still be using it. Once FILE (its owner file, by forge_owner) is
# written: while the process it names runs with the same start time, so a
# recycled PID does not count. Before that (FILE missing, empty or not a
# regular file): while PID, which the folder's name carries, is alive; with
# no PID the owner cannot be told, and counts as alive.
forge_owner_alive() {
	if forge_is_real_file "$1" && [ -s "$1" ]; then
		read -r forge_owner_pid forge_owner_start 2>/dev/null <"$1" || return 1
		forge_is_uint "$forge_owner_pid" || return 1
		kill -0 "$forge_owner_pid" 2>/dev/null || return 1
		[ -n "$forge_owner_start" ] || return 0
		forge_proc_start "$forge_owner_pid"
		[ -z "$forge_proc_start" ] || [ "$forge_proc_start" = "$forge_owner_start" ]
		return
	fi
	[ -n "${2:-}" ] || return 0
	kill -0 "$2" 2>/dev/null
}

# forge_copy_tmp_alive DIR: true while the run that made the copy folder DIR
# may still be using it. The folder is named after its owner's PID (six hex
# digits), so even one killed before it wrote DIR/owner can be told apart; a
# folder forge cannot attribute is left alone.
forge_copy_tmp_alive() {
	case ${1##*.} in
	[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f])
		forge_owner_alive "$1/owner" "$((0x${1##*.}))" ;;
	*) forge_owner_alive "$1/owner" ;;
	esac
}

# forge_is_real_dir PATH, forge_is_real_file PATH: PATH is a folder, a
# regular file, and not through a symbolic link of its own.
forge_is_real_dir() { [ -d "$1" ] && [ ! -L "$1" ]; }
forge_is_real_file() { [ -f "$1" ] && [ ! -L "$1" ]; }

# forge_rm_tree PATH: removes PATH (a symbolic link itself, never what it
# points to), also when a step made parts of it read-only.
forge_rm_tree() {
	[ -e "$1" ] || [ -L "$1" ] || return 0
	rm -rf -- "$1" 2>/dev/null && return 0
	[ ! -L "$1" ] || return 1
	chmod -R u+rwx -- "$1" 2>/dev/null || :
	rm -rf -- "$1"
}

# --- the caller's git environment -------------------------------------------
# Git exports these to hooks (forge-verify may run from a pre-commit hook),
# and a caller may set them. They decide which repository is the source, as
# they would for git; they never reach a git command that works on a copy,
# nor a step that runs in one.

# forge_git_env_absolute: makes a relative GIT_DIR, GIT_WORK_TREE,
# GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY or GIT_COMMON_DIR absolute against the
# current directory (where git would resolve it), since forge runs git with -C.
forge_git_env_absolute() {
	forge_env_pwd=$(pwd) || return 1
	case ${GIT_DIR:-/} in /*) ;; *) GIT_DIR=$forge_env_pwd/$GIT_DIR ;; esac
	case ${GIT_WORK_TREE:-/} in /*) ;; *) GIT_WORK_TREE=$forge_env_pwd/$GIT_WORK_TREE ;; esac
	case ${GIT_INDEX_FILE:-/} in /*) ;; *) GIT_INDEX_FILE=$forge_env_pwd/$GIT_INDEX_FILE ;; esac
	case ${GIT_OBJECT_DIRECTORY:-/} in /*) ;; *) GIT_OBJECT_DIRECTORY=$forge_env_pwd/$GIT_OBJECT_DIRECTORY ;; esac
	case ${GIT_COMMON_DIR:-/} in /*) ;; *) GIT_COMMON_DIR=$forge_env_pwd/$GIT_COMMON_DIR ;; esac
}

# forge_git_env_unset: unsets every variable that points git at a repository
# or changes its configuration (SPEC section 2), so git works on the
# repository of the current directory: the copy.
forge_git_env_unset() {
	forge_env_count=${GIT_CONFIG_COUNT:-0}
	forge_is_uint "$forge_env_count" || forge_env_count=0
	[ "${#forge_env_count}" -le 4 ] || forge_env_count=10000
	unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
		GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_COMMON_DIR GIT_NAMESPACE \
		GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_QUARANTINE_PATH \
		GIT_SHALLOW_FILE GIT_GRAFT_FILE GIT_REPLACE_REF_BASE GIT_PREFIX
	# GIT_CONFIG_KEY_<n>/GIT_CONFIG_VALUE_<n>, n < GIT_CONFIG_COUNT, go with
	# it (without the count git ignores them; they are unset for tidiness).
	forge_env_n=0
	while [ "$forge_env_n" -lt "$forge_env_count" ]; do
		unset "GIT_CONFIG_KEY_$forge_env_n" "GIT_CONFIG_VALUE_$forge_env_n"
		forge_env_n=$((forge_env_n + 1))
	done
}

# forge_copy_git DIR ARG...: git in the copy at DIR, hooks disabled and the
# caller's git environment unset; GIT_INDEX_FILE=$forge_copy_index when that
# is set (a scratch index).
forge_copy_git() {
	(
		forge_git_env_unset
		if [ -n "${forge_copy_index:-}" ]; then
			GIT_INDEX_FILE=$forge_copy_index
			export GIT_INDEX_FILE
		fi
		forge_copy_dir_arg=$1
		shift
		exec git --no-pager -c core.hooksPath=/dev/null -c core.fsmonitor=false -C "$forge_copy_dir_arg" "$@"
	)
}

# forge_source_git ROOT ARG...: a read of the source repository at ROOT: the
# caller's environment applies, and git takes no optional lock (it does not
# refresh the index, which a pre-commit hook's commit is still writing).
forge_source_git() {
	forge_source_root=$1
	shift
	forge_git --no-optional-locks -C "$forge_source_root" "$@"
}

# --- where copies live -------------------------------------------------------

# forge_real_dir DIR: sets forge_real to the physical path of the folder DIR.
forge_real_dir() {
	forge_real=$(cd -P -- "$1" 2>/dev/null && pwd -P) && [ -n "$forge_real" ]
}

# forge_copy_place_check DIR WHAT: exits 73 when the folder DIR (or, while
# it does not exist, its nearest existing parent) lies inside the source's
# work tree or git directory (forge_root_real, forge_common_real): from a
# copy there, tools that search parent folders would find the real
# repository. Checked before anything is created there.
forge_copy_place_check() {
	forge_place=$1
	while [ ! -d "$forge_place" ] && [ -n "$forge_place" ]; do
		forge_place=${forge_place%/*}
	done
	forge_real_dir "${forge_place:-/}" || forge_die 73 "cannot use the $2 $1"
	case $forge_real/ in
	"$forge_root_real"/* | "$forge_common_real"/*)
		forge_die 73 "the $2 $1 lies inside the repository $forge_root_real: a copy there would see the real tree; point it elsewhere"
		;;
	esac
}

# forge_copy_tmp_base: sets forge_tmp_base to the folder cold copies go in:
# TMPDIR (made absolute against the current directory, as mktemp would use
# it), else /tmp; checked to exist and to lie outside the repository.
forge_copy_tmp_base() {
	forge_tmp_base=${TMPDIR:-/tmp}
	case $forge_tmp_base in
	/*) ;;
	*) forge_tmp_base=$(pwd)/$forge_tmp_base ;;
	esac
	[ -d "$forge_tmp_base" ] || forge_die 73 "TMPDIR $forge_tmp_base is not a folder"
	forge_copy_place_check "$forge_tmp_base" 'TMPDIR'
}

# --- the copy's own repository -----------------------------------------------

# forge_copy_require_head ROOT: sets forge_head, forge_common_dir,
# forge_objects_dir (where the source's objects are, as git finds them) and
# the physical paths forge_root_real and forge_common_real; exits 69 when the
# repository has no commit yet.
forge_copy_require_head() {
	[ "${forge_head_of:-}" = "$1" ] || forge_head "$1"
	[ -n "$forge_head" ] || forge_die 69 "--isolated needs a commit; $1 has none yet"
	forge_require_tool flock tar xargs
	forge_git_common_dir "$1" || forge_die 69 "cannot find the git directory of $1"
	forge_objects_dir=${GIT_OBJECT_DIRECTORY:-$forge_common_dir/objects}
	forge_real_dir "$1" || forge_die 69 "cannot resolve $1"
	forge_root_real=$forge_real
	forge_real_dir "$forge_common_dir" || forge_die 69 "cannot resolve $forge_common_dir"
	forge_common_real=$forge_real
}

# forge_copy_texts: sets the texts the copy functions use (assigned when
# called, so that sourcing forge.sh defines functions only):
# forge_carried_config, the local configuration that decides how files are
# checked out (and who commits), carried from the source into the copy;
# forge_carry_config_sh, run by xargs -0 over the "key<LF>value" entries of
# git config -z with $1 the config file to write (values passed as data);
# forge_links_check_sh, see forge_copy_links_check.
forge_copy_texts() {
	forge_carried_config='^(filter\..*|lfs\..*|core\.(autocrlf|eol|safecrlf|checkroundtripencoding|symlinks|ignorecase|precomposeunicode)|user\.(name|email)|extensions\.objectformat)$'
	# shellcheck disable=SC2016 # programs for sh -c, not expanded here
	forge_carry_config_sh='cfg=$1; shift
nl="
"
for e; do
	case $e in *"$nl"*) k=${e%%"$nl"*} v=${e#*"$nl"} ;; *) k=$e v=true ;; esac
	git config -f "$cfg" --add -- "$k" "$v" || exit 1
	if [ "$k" = extensions.objectformat ]; then
		git config -f "$cfg" core.repositoryformatversion 1 || exit 1
	fi
done'
	# Prints the first path that is, or lies under, a symbolic link in the
	# copy $1, and fails. Each file's folder is checked upwards until one
	# known to be clean.
	# shellcheck disable=SC2016 # a program for sh -c, not expanded here
	forge_links_check_sh='copy=$1; shift
clean=
for p; do
	if [ -L "$copy/$p" ]; then printf "%s\n" "$p"; exit 1; fi
	d=$p
	while :; do
		case $d in */*) d=${d%/*} ;; *) break ;; esac
		[ "$d" != "$clean" ] || break
		case $clean in "$d"/*) break ;; esac
		if [ -L "$copy/$d" ]; then printf "%s\n" "$d"; exit 1; fi
	done
	case $p in */*) clean=${p%/*} ;; esac
done'
}

# forge_alt_line PATH: sets forge_alt to PATH as a line of an alternates
# file: C-quoted when it holds a newline or starts with a double quote.
forge_alt_line() {
	case $1 in
	*'
'* | '"'*) ;;
	*) forge_alt=$1; return 0 ;;
	esac
	forge_alt_rest=$1 forge_alt=
	while [ -n "$forge_alt_rest" ]; do
		forge_alt_c=${forge_alt_rest%"${forge_alt_rest#?}"}
		forge_alt_rest=${forge_alt_rest#?}
		case $forge_alt_c in
		\\) forge_alt="$forge_alt\\\\" ;;
		\") forge_alt="$forge_alt\\\"" ;;
		'
') forge_alt="$forge_alt\\n" ;;
		*) forge_alt=$forge_alt$forge_alt_c ;;
		esac
	done
	forge_alt="\"$forge_alt\""
}

# forge_copy_store DIR: adds the object store DIR, made physical, to
# forge_copy_stores (one a line). One that is not a folder, or whose path
# holds a newline (which no mount plan carries), is left out.
forge_copy_store() {
	forge_real_dir "$1" || return 0
	case $forge_real in *'
'*) return 0 ;; esac
	forge_copy_stores=$forge_copy_stores$forge_real'
'
}

# forge_copy_repo ROOT COPY SCRATCH: (re)creates COPY/.git as a repository of
# its own: no hooks, the source's objects borrowed read-only (alternates,
# the stores recorded in forge_copy_stores for the copy's sandbox), its
# refs (less the stash) as packed refs, HEAD on the same branch (or detached),
# its shallow file and info/exclude, and the carried configuration. Whatever
# COPY/.git held before is removed first (a symbolic link as a link).
# SCRATCH holds intermediate files.
forge_copy_repo() {
	forge_copy_texts
	forge_repo_gd=$2/.git
	forge_rm_tree "$forge_repo_gd" || forge_die 73 "cannot remove $forge_repo_gd"
	forge_copy_git "$2" init --quiet --template= . >/dev/null 2>"$3/git.err" ||
		forge_die 74 "cannot create the copy's repository: $(cat "$3/git.err")"
	mkdir -p -- "$forge_repo_gd/objects/info" "$forge_repo_gd/info" ||
		forge_die 73 "cannot write in $forge_repo_gd"
	# The stores the copy borrows, recorded as written (forge_copy_stores):
	# the sandbox of a copy mounts these, never what an alternates file says.
	forge_copy_stores=
	{
		forge_alt_line "$forge_objects_dir"
		printf '%s\n' "$forge_alt"
		forge_copy_store "$forge_objects_dir"
		# Objects a caller lends the source (a quarantine, say), absolute
		# entries only: git resolves relative ones against the source.
		forge_alt_list=${GIT_ALTERNATE_OBJECT_DIRECTORIES:-}
		while [ -n "$forge_alt_list" ]; do
			forge_alt_entry=${forge_alt_list%%:*}
			case $forge_alt_list in *:*) forge_alt_list=${forge_alt_list#*:} ;; *) forge_alt_list= ;; esac
			case $forge_alt_entry in /*) printf '%s\n' "$forge_alt_entry" && forge_copy_store "$forge_alt_entry" ;; esac
		done
	} >"$forge_repo_gd/objects/info/alternates" || forge_die 73 "cannot write in $forge_repo_gd"
	# The configuration: what checks files out as the source does; and never a
	# split index or fsmonitor from the user's global configuration, which
	# would tie the index to files outside it.
	forge_repo_cfg=$forge_repo_gd/config
	# (A section of its own after the one git init wrote: no git config
	# process needed.)
	printf '[core]\n\tsplitIndex = false\n\tfsmonitor = false\n' >>"$forge_repo_cfg" ||
		forge_die 73 "cannot write $forge_repo_cfg"
	: >"$3/config"
	forge_source_git "$1" config --local --includes -z --get-regexp "$forge_carried_config" \
		>"$3/config" 2>/dev/null || :
	if [ -s "$3/config" ]; then
		(forge_git_env_unset && exec xargs -0 -r sh -c "$forge_carry_config_sh" sh "$forge_repo_cfg") \
			<"$3/config" >/dev/null 2>"$3/git.err" ||
			forge_die 74 "cannot carry the repository's configuration into the copy: $(cat "$3/git.err")"
	fi
	# Refs: every ref of the source, the stash left out (it lives in a reflog).
	forge_source_git "$1" for-each-ref --format='%(objectname) %(refname)' >"$3/refs" 2>"$3/git.err" ||
		forge_die 74 "cannot list the refs of $1: $(cat "$3/git.err")"
	grep -v ' refs/stash$' <"$3/refs" >"$forge_repo_gd/packed-refs" || :
	forge_repo_branch=$(forge_source_git "$1" symbolic-ref -q HEAD 2>/dev/null) || forge_repo_branch=
	if [ -n "$forge_repo_branch" ] && grep -qxF -- "$forge_head $forge_repo_branch" "$3/refs"; then
		printf 'ref: %s\n' "$forge_repo_branch" >"$forge_repo_gd/HEAD"
	else
		printf '%s\n' "$forge_head" >"$forge_repo_gd/HEAD"
	fi || forge_die 73 "cannot write $forge_repo_gd/HEAD"
	for forge_repo_file in shallow info/exclude; do
		if forge_is_real_file "$forge_common_dir/$forge_repo_file"; then
			cp -- "$forge_common_dir/$forge_repo_file" "$forge_repo_gd/$forge_repo_file" ||
				forge_die 73 "cannot write $forge_repo_gd/$forge_repo_file"
		fi
	done
}

# forge_copy_checkout COPY ERRFILE: checks HEAD out in COPY (its index, if
# any, only tells git which files it can leave alone: a file whose stat data
# still matches its entry is not rewritten). The stat data is compared in
# full whatever the user's configuration says (ctime included: a write
# always changes it, and no step can set it back), so a file a step touched
# never passes for clean; one touched in the second its entry was recorded
# is "racy" and compared by content, provided the index file keeps the time
# it was written (git's racy-git rule).
forge_copy_checkout() {
	forge_copy_git "$1" -c core.trustctime=true -c core.checkStat=default -c core.ignoreStat=false \
		-c core.untrackedCache=false reset --hard --quiet >"$2" 2>&1
}

# --- filling the copy --------------------------------------------------------

# forge_copy_fill ROOT COPY SCRATCH [OBJECTS]: replays ROOT's uncommitted
# changes and untracked files into COPY (a checkout of HEAD) and computes the
# snapshot's tree into forge_copy_tree (its objects in OBJECTS: see
# forge_copy_snapshot_tree). SCRATCH holds the patch and the file lists.
forge_copy_fill() {
	forge_fill_patch=$3/changes.patch
	if [ -e "$3/tar.failed" ] || [ -L "$3/tar.failed" ]; then
		rm -f -- "$3/tar.failed"
	fi
	# Flags that user configuration cannot reshape: no colour, no external
	# diff or textconv, full binary patches, standard a/ b/ prefixes, fixed
	# context, submodules left alone.
	forge_source_git "$1" diff HEAD --binary --full-index --no-color --no-ext-diff \
		--no-textconv --no-renames --ignore-submodules=all --unified=3 \
		--src-prefix=a/ --dst-prefix=b/ --output="$forge_fill_patch" 2>"$3/git.err" ||
		forge_die 74 "cannot compute the uncommitted changes: $(cat "$3/git.err")"
	if [ -s "$forge_fill_patch" ]; then
		# git apply checks every path first, a path beyond a symbolic link
		# included, and writes nothing unless all of them apply.
		forge_git_apply "$2" "$forge_fill_patch" 2>"$3/git.err" ||
			forge_die 74 "the uncommitted changes do not apply to HEAD in the copy: $(cat "$3/git.err")"
	fi
	forge_source_git "$1" ls-files -z --others --exclude-standard >"$3/untracked" 2>"$3/git.err" ||
		forge_die 74 "cannot list the untracked files: $(cat "$3/git.err")"
	if [ -s "$3/untracked" ]; then
		forge_copy_links_check "$2" "$3/untracked"
		# File names come NUL-separated and verbatim (names may start with "-").
		{ tar -C "$1" --null --verbatim-files-from -T "$3/untracked" -cf - 2>"$3/tar.err" ||
			echo failed >"$3/tar.failed"; } | tar -C "$2" -xpf - 2>>"$3/tar.err" ||
			echo failed >"$3/tar.failed"
		[ ! -e "$3/tar.failed" ] ||
			forge_die 74 "cannot copy the untracked files: $(cat "$3/tar.err")"
	fi
	forge_copy_snapshot_tree "$2" "$3" "${4:-}"
}


# forge_copy_links_check COPY LIST: exits 74, before anything is written,
# when a path of the NUL-separated LIST would be written through a symbolic
# link in COPY: a tracked symlink of HEAD that the user replaced with a folder
# and hid with --assume-unchanged or --skip-worktree, say.
forge_copy_links_check() {
	forge_copy_texts
	forge_links_bad=$(xargs -0 -r sh -c "$forge_links_check_sh" sh "$1" <"$2") && return 0
	[ -n "$forge_links_bad" ] || forge_die 74 "cannot check the untracked files against the copy"
	forge_die 74 "'$forge_links_bad' is a symbolic link in HEAD but a folder in the working tree (hidden with --assume-unchanged or --skip-worktree?): the copy would be written through it"
}

# forge_git_apply COPY [APPLY-OPTION...] PATCH: git apply in the copy,
# whitespace settings of the user's configuration neutralised (the patch is
# the user's own working state, not a contribution to police).
forge_git_apply() {
	forge_apply_dir=$1
	shift
	forge_copy_git "$forge_apply_dir" -c apply.whitespace=nowarn -c apply.ignoreWhitespace=no \
		apply --whitespace=nowarn "$@"
}

# forge_copy_snapshot_tree COPY SCRATCH [OBJECTS]: sets forge_copy_tree to
# the tree of HEAD + the patch + the untracked files, built in a scratch
# index that starts as a copy of the copy's own (HEAD, with its cached
# trees), so only what changed is hashed. The objects go to the folder
# OBJECTS (made when missing; a warm slot keeps its own outside the copy, so
# that the copy's .git stays small to remove and remake), else to the
# copy's, never to the source.
forge_copy_snapshot_tree() {
	forge_copy_index=$2/index
	forge_snap_objects=${3:-}
	if [ -n "$forge_snap_objects" ] && ! forge_is_real_dir "$forge_snap_objects"; then
		forge_rm_tree "$forge_snap_objects" || forge_die 73 "cannot remove $forge_snap_objects"
		mkdir -p -- "$forge_snap_objects" || forge_die 73 "cannot create $forge_snap_objects"
	fi
	if ! {
		# HEAD's tree read afresh (its cached trees come with it): entries
		# without stat data, never "racily clean", so no index write of the
		# scratch index hashes the files just checked out again.
		# (SCRATCH is new, so there is no index to remove; and read-tree
		# without -m never reads one.)
		forge_snapshot_git "$1" read-tree "$forge_head" &&
			if [ -s "$2/changes.patch" ]; then
				forge_snapshot_git "$1" -c apply.whitespace=nowarn -c apply.ignoreWhitespace=no \
					apply --whitespace=nowarn --cached "$2/changes.patch"
			fi &&
			if [ -s "$2/untracked" ]; then
				forge_snapshot_git "$1" update-index --add -z --stdin <"$2/untracked"
			fi &&
			forge_copy_tree=$(forge_snapshot_git "$1" write-tree)
	}; then
		forge_copy_index=
		forge_die 74 "cannot compute the tree of the verified snapshot"
	fi
	forge_copy_index=
}

# forge_snapshot_git COPY ARG...: git in the copy at COPY for the snapshot's
# tree: the scratch index forge_copy_index, and new objects in
# forge_snap_objects when set (the copy's objects, and through them the
# source's, still read).
forge_snapshot_git() {
	if [ -z "${forge_snap_objects:-}" ]; then
		forge_copy_git "$@"
		return
	fi
	(
		GIT_OBJECT_DIRECTORY=$forge_snap_objects
		GIT_ALTERNATE_OBJECT_DIRECTORIES=$1/.git/objects
		export GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
		GIT_INDEX_FILE=$forge_copy_index
		export GIT_INDEX_FILE
		forge_snap_dir=$1
		shift
		exec git --no-pager -c core.hooksPath=/dev/null -c core.fsmonitor=false -C "$forge_snap_dir" "$@"
	)
}

# --- cold copies ---------------------------------------------------------------

# forge_copy_prune: removes cold copies whose owner is gone (a run that was
# SIGKILLed) from forge_tmp_base, else from an absolute TMPDIR (never from a
# relative one, nor from one inside the repository, forge_root_real or
# forge_common_real: there a forge-verify.XXXXXX folder is the user's, since
# no cold copy is ever made there). Prints each folder it removes when
# forge_prune_verbose=1.
forge_copy_prune() {
	forge_prune_base=${forge_tmp_base:-${TMPDIR:-/tmp}}
	case $forge_prune_base in /*) ;; *) return 0 ;; esac
	{ [ -n "${forge_root_real:-}" ] && [ -n "${forge_common_real:-}" ]; } ||
		forge_die 70 "forge_copy_prune: the repository is not known"
	forge_real_dir "$forge_prune_base" || return 0
	case $forge_real/ in "$forge_root_real"/* | "$forge_common_real"/*) return 0 ;; esac
	for forge_prune_tmp in "$forge_prune_base"/forge-verify.??????/; do
		forge_prune_tmp=${forge_prune_tmp%/}
		forge_is_real_dir "$forge_prune_tmp" || continue
		forge_copy_tmp_alive "$forge_prune_tmp" && continue
		forge_prune_note "$forge_prune_tmp" || continue
		forge_contain_forget "$forge_prune_tmp"
		forge_rm_tree "$forge_prune_tmp" || :
	done
	return 0
}

# forge_copy_create ROOT: makes a cold copy of ROOT's working state. Sets
# forge_copy_tmp (the temporary folder), forge_copy_dir (the copy's root) and
# forge_copy_tree (the tree of the verified snapshot). Exits 69 without a
# commit, 73 when TMPDIR is unusable or inside the repository, 74 when the
# copy cannot be made faithfully.
forge_copy_create() {
	[ -z "${forge_copy_tmp:-}" ] ||
		forge_die 70 "a copy exists already ($forge_copy_tmp): forge_copy_destroy it first"
	forge_copy_require_head "$1"
	forge_copy_tmp_base
	forge_copy_prune
	# Named after this process (see forge_copy_tmp_alive); mkdir, not
	# mktemp, so the name says whose it is from the instant it exists. One
	# left by an earlier process with the same PID is dead by definition.
	forge_copy_tmp=$forge_tmp_base/forge-verify.$(printf '%06x' "$$")
	if ! mkdir -m 700 -- "$forge_copy_tmp" 2>/dev/null; then
		if [ -L "$forge_copy_tmp" ] || [ ! -d "$forge_copy_tmp" ] ||
			! forge_rm_tree "$forge_copy_tmp" || ! mkdir -m 700 -- "$forge_copy_tmp"; then
			forge_die 73 "cannot create the folder $forge_copy_tmp"
		fi
	fi
	forge_owner >"$forge_copy_tmp/owner" || forge_die 73 "cannot write in $forge_copy_tmp"
	forge_copy_name=${1##*/}
	forge_copy_dir=$forge_copy_tmp/${forge_copy_name:-repo}-${forge_copy_tmp##*.}
	mkdir -- "$forge_copy_dir" || forge_die 73 "cannot create $forge_copy_dir"
	forge_copy_repo "$1" "$forge_copy_dir" "$forge_copy_tmp"
	forge_copy_checkout "$forge_copy_dir" "$forge_copy_tmp/git.err" ||
		forge_die 74 "cannot check out HEAD into the copy: $(cat "$forge_copy_tmp/git.err")"
	forge_copy_fill "$1" "$forge_copy_dir" "$forge_copy_tmp"
}

# forge_copy_destroy: removes the cold copy. Safe to call more than once and
# on a half-made copy.
forge_copy_destroy() {
	if [ -n "${forge_copy_tmp:-}" ]; then
		forge_rm_tree "$forge_copy_tmp" ||
			forge_warn "could not remove the copy $forge_copy_tmp"
		forge_copy_tmp=
	fi
}

# --- the warm pool -------------------------------------------------------------

# forge_pool_base: sets forge_pool_base to
# ${XDG_CACHE_HOME:-$HOME/.cache}/forge/pool (a relative XDG_CACHE_HOME is
# ignored, as the XDG rules say). Exits 73 when there is none.
forge_pool_base() {
	case ${XDG_CACHE_HOME:-} in
	/*) forge_pool_base=$XDG_CACHE_HOME/forge/pool ;;
	*)
		case ${HOME:-} in
		/*) forge_pool_base=$HOME/.cache/forge/pool ;;
		*) forge_die 73 "no folder for the warm pool: set XDG_CACHE_HOME or HOME to an absolute path" ;;
		esac
		;;
	esac
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
	if [ -L "$1" ] || { [ -e "$1" ] && [ ! -d "$1" ]; }; then
		forge_rm_tree "$1" || forge_die 73 "cannot remove $1"
	fi
	# Another run may make it at the same moment.
	[ -d "$1" ] || mkdir -m 700 -- "$1" 2>/dev/null || forge_is_real_dir "$1" ||
		forge_die 73 "cannot create $1"
}

# forge_pool_repo ROOT: sets forge_pool to this repository's pool folder,
# <base>/<repo-id>, and creates it with a "source" file naming the git common
# dir (so --prune can tell a pool whose repository is gone).
forge_pool_repo() {
	forge_pool_base
	forge_copy_place_check "$forge_pool_base" 'warm pool'
	[ -d "$forge_pool_base" ] || mkdir -p -- "$forge_pool_base" 2>/dev/null ||
		forge_die 73 "cannot create $forge_pool_base"
	forge_repo_id
	forge_pool=$forge_pool_base/$forge_repo_id
	forge_pool_dir_prepare "$forge_pool"
	forge_read_file "$forge_pool/source" 2>/dev/null || forge_file=
	if [ "$forge_file" != "$forge_common_real" ]; then
		{ printf '%s\n' "$forge_common_real" >"$forge_pool/source.$$" &&
			mv -f -- "$forge_pool/source.$$" "$forge_pool/source"; } ||
			forge_die 73 "cannot write $forge_pool/source"
	fi
}

# forge_pool_lock_held LOCK [FD]: true when file descriptor FD (default 9),
# just locked, is still the file LOCK: --prune removes a slot's lock file
# while it holds it, so a run that opened the file before and locked it
# after would hold a lock on a file no one else sees.
forge_pool_lock_held() {
	# shellcheck disable=SC3013 # -ef: dash, bash and busybox sh all have it
	[ "/dev/fd/${2:-9}" -ef "$1" ]
}

# forge_pool_acquire ROOT: takes the lowest free warm slot (locking it on file
# descriptor 9 for the rest of the run), resets it completely to HEAD and
# fills it like a cold copy. Sets forge_copy_dir, forge_copy_tree,
# forge_pool_slot, forge_pool_dir (the slot) and forge_pool_state (forge's
# files about the slot: its clean index, the setup stamp, scratch files).
# The paths in forge_isolated_keep (newline-separated) survive the reset.
forge_pool_acquire() {
	forge_copy_require_head "$1"
	forge_require_tool sha256sum
	forge_pool_repo "$1"
	forge_copy_prune
	forge_pool_slot=1 forge_pool_tries=0
	while :; do
		forge_pool_lock=$forge_pool/$forge_pool_slot.lock
		# Opening a FIFO would block; a link would lock what it points to.
		if [ -L "$forge_pool_lock" ] || { [ -e "$forge_pool_lock" ] && [ ! -f "$forge_pool_lock" ]; }; then
			forge_rm_tree "$forge_pool_lock" || forge_die 73 "cannot remove $forge_pool_lock"
		fi
		exec 9>>"$forge_pool_lock" || forge_die 73 "cannot create $forge_pool_lock"
		if flock -n 9; then
			forge_pool_lock_held "$forge_pool_lock" && break
			# --prune removed the slot (and its lock file) between the
			# open and the lock: try the same slot again.
			exec 9>&-
			forge_pool_tries=$((forge_pool_tries + 1))
			[ "$forge_pool_tries" -le 16 ] || forge_die 75 "the warm slot $forge_pool_lock keeps being removed"
			continue
		fi
		exec 9>&-
		forge_pool_slot=$((forge_pool_slot + 1))
		[ "$forge_pool_slot" -le 64 ] || forge_die 75 "every warm slot in $forge_pool is busy"
	done
	forge_pool_held=1
	forge_pool_dir=$forge_pool/$forge_pool_slot
	forge_pool_state=$forge_pool/$forge_pool_slot.state
	forge_pool_dir_prepare "$forge_pool_dir"
	forge_pool_dir_prepare "$forge_pool_state"
	# Scratch files are made anew each run (what was left there, a FIFO
	# say, is never opened).
	forge_rm_tree "$forge_pool_state/scratch" || forge_die 73 "cannot remove $forge_pool_state/scratch"
	forge_pool_dir_prepare "$forge_pool_state/scratch"
	forge_copy_name=${1##*/}
	forge_copy_dir=$forge_pool_dir/${forge_copy_name:-repo}
	# The slot holds the copy and nothing else (another worktree of the same
	# repository leaves a copy of another name; a step may write next to it).
	for forge_pool_entry in "$forge_pool_dir"/* "$forge_pool_dir"/.[!.]* "$forge_pool_dir"/..?*; do
		[ "$forge_pool_entry" = "$forge_copy_dir" ] || forge_rm_tree "$forge_pool_entry" ||
			forge_die 73 "cannot remove $forge_pool_entry"
	done
	forge_pool_dir_prepare "$forge_copy_dir"
	if ! forge_pool_reset "$1"; then
		# A slot that cannot be reset is made anew.
		rm -f -- "$forge_pool_state/index" "$forge_pool_state/setup"
		forge_rm_tree "$forge_copy_dir" || forge_die 73 "cannot remove the broken slot $forge_copy_dir"
		forge_pool_dir_prepare "$forge_copy_dir"
		forge_pool_reset "$1" ||
			forge_die 74 "cannot check out HEAD into $forge_copy_dir: $(cat "$forge_pool_state/scratch/git.err")"
	fi
	forge_copy_fill "$1" "$forge_copy_dir" "$forge_pool_state/scratch" "$forge_pool_state/objects"
}

# forge_pool_reset ROOT: brings the slot to HEAD as a fresh copy would be: a
# new .git (refs, config, sparse-checkout, hooks, objects of earlier steps
# gone), tracked files restored, every untracked and ignored file removed but
# the keep paths, and those only when they are real folders. The checkout
# works on the slot's own index, kept outside the copy where no step writes
# it (index flags a step set are not in it), with the time it was written:
# its stat data spares rewriting unchanged files, and never passes a file a
# step touched for clean (forge_copy_checkout). The copy gets a copy of it.
forge_pool_reset() {
	# Nothing of a sandbox of this slot (one a killed run left) may run
	# while the host resets it: see forge_contain_begin.
	forge_contain_forget "${forge_copy_dir%/*}"
	forge_reset_scratch=$forge_pool_state/scratch
	forge_copy_repo "$1" "$forge_copy_dir" "$forge_reset_scratch"
	forge_reset_index=$forge_pool_state/index
	if [ -L "$forge_reset_index" ] || { [ -e "$forge_reset_index" ] && [ ! -f "$forge_reset_index" ]; }; then
		forge_rm_tree "$forge_reset_index" || return 1
	fi
	set --
	forge_list=${forge_isolated_keep:-}
	while forge_list_next; do
		set -- "$@" "--exclude=/$forge_item"
	done
	# Before the checkout, which puts back whatever of HEAD this removes.
	forge_pool_keep_check
	forge_copy_index=$forge_reset_index
	if ! forge_copy_checkout "$forge_copy_dir" "$forge_reset_scratch/git.err"; then
		forge_copy_index=
		return 1
	fi
	if ! forge_pool_clean "$@"; then
		# A step may have left read-only folders behind.
		chmod -R u+rwx -- "$forge_copy_dir" 2>/dev/null || :
		if ! forge_pool_clean "$@"; then
			forge_copy_index=
			return 1
		fi
	fi
	forge_copy_index=
	forge_pool_dir_modes || return 1
	cp -- "$forge_reset_index" "$forge_copy_dir/.git/index"
}

# forge_pool_dir_modes: gives every folder of the slot's copy (the copy
# itself too, .git and the keep paths apart) the mode a cold copy's have,
# 0777 less the umask, as git and mkdir make them: git restores files, not
# the modes of folders a step changed.
forge_pool_dir_modes() {
	forge_dir_mode=$(umask) || return 1
	forge_dir_mode=$(printf '%o' "$((0777 & ~0$forge_dir_mode))") || return 1
	set -- -path ./.git
	forge_list=${forge_isolated_keep:-}
	while forge_list_next; do
		set -- "$@" -o -path "./$forge_item"
	done
	(cd -P -- "$forge_copy_dir" &&
		exec find . \( "$@" \) -prune -o -type d ! -perm "$forge_dir_mode" -exec chmod "$forge_dir_mode" {} +)
}

# forge_pool_clean [--exclude=/KEEP...]: removes every untracked file of the
# slot's copy, ignored ones too but those in the keep paths. Only ignored
# files are kept there: a keep path that is not ignored (a tracked folder,
# say) would otherwise carry an earlier run's untracked files into this one.
forge_pool_clean() {
	if [ "$#" -gt 0 ]; then
		forge_copy_git "$forge_copy_dir" clean -ffdq >/dev/null 2>&1 || return 1
	fi
	forge_copy_git "$forge_copy_dir" clean -ffdxq "$@" >/dev/null 2>&1
}

# forge_pool_keep_check: a keep path (or a folder on its way) that is a
# symbolic link or not a folder is removed, never followed, and the slot's
# setup is run again. Runs before the reset's checkout, which restores what
# of it HEAD tracks.
forge_pool_keep_check() {
	forge_list=${forge_isolated_keep:-}
	while forge_list_next; do
		forge_keep_sub=
		forge_keep_left=$forge_item/
		while [ -n "$forge_keep_left" ]; do
			forge_keep_sub=$forge_keep_sub${forge_keep_left%%/*}
			forge_keep_left=${forge_keep_left#*/}
			forge_keep_at=$forge_copy_dir/$forge_keep_sub
			if [ -L "$forge_keep_at" ] || { [ -e "$forge_keep_at" ] && [ ! -d "$forge_keep_at" ]; }; then
				forge_rm_tree "$forge_keep_at" || forge_die 73 "cannot remove $forge_keep_at"
				rm -f -- "$forge_pool_state/setup"
				break
			fi
			forge_keep_sub=$forge_keep_sub/
		done
	done
}

# forge_pool_release: unlocks the slot. Safe to call when none is held.
forge_pool_release() {
	[ -n "${forge_pool_held:-}" ] || return 0
	forge_pool_held=
	exec 9>&-
}

# --- --prune -------------------------------------------------------------------

# forge_prune_note PATH: with forge_prune_verbose=1, prints "freed PATH (SIZE)"
# for what is about to be removed and adds its size to forge_prune_kib. With
# forge_prune_dry=1 too, prints "would free PATH (SIZE)" and returns 1: the
# caller removes nothing.
forge_prune_note() {
	[ "${forge_prune_verbose:-0}" = 1 ] || return 0
	forge_prune_size=$(du -sk -- "$1" 2>/dev/null) || forge_prune_size=0
	forge_prune_size=${forge_prune_size%%[!0-9]*}
	forge_prune_kib=$((${forge_prune_kib:-0} + ${forge_prune_size:-0}))
	if [ "${forge_prune_dry:-0}" = 1 ]; then
		printf 'would free %s (%s)\n' "$1" "$(forge_human_kib "${forge_prune_size:-0}")"
		return 1
	fi
	printf 'freed %s (%s)\n' "$1" "$(forge_human_kib "${forge_prune_size:-0}")"
}

# forge_human_kib KIB: prints a size given in KiB for people: "12 KiB",
# "345.2 MiB", "1.5 GiB".
forge_human_kib() {
	if [ "$1" -ge 1048576 ]; then
		printf '%d.%d GiB' "$(($1 / 1048576))" "$((($1 % 1048576) * 10 / 1048576))"
	elif [ "$1" -ge 1024 ]; then
		printf '%d.%d MiB' "$(($1 / 1024))" "$((($1 % 1024) * 10 / 1024))"
	else
		printf '%d KiB' "$1"
	fi
}

# forge_prune ROOT [--dry-run]: forge-verify --prune: removes this
# repository's warm pool (slots in use by a run are left alone), the cold
# copies of killed runs, the pools of repositories that no longer exist, and
# what older versions of forge left in the git directory. Prints what it
# freed, slot by slot, with sizes; with --dry-run, what it would free, and
# removes nothing.
forge_prune() {
	forge_prune_verbose=1 forge_prune_kib=0 forge_prune_dry=0
	[ "${2:-}" != --dry-run ] || forge_prune_dry=1
	forge_require_tool flock sha256sum
	forge_git_common_dir "$1" || forge_die 69 "cannot find the git directory of $1"
	forge_real_dir "$1" || forge_die 69 "cannot resolve $1"
	forge_root_real=$forge_real
	forge_real_dir "$forge_common_dir" || forge_die 69 "cannot resolve $forge_common_dir"
	forge_common_real=$forge_real
	forge_copy_prune
	forge_pool_base
	forge_repo_id
	forge_pool_remove "$forge_pool_base/$forge_repo_id"
	for forge_prune_pool in "$forge_pool_base"/????????????????/; do
		forge_prune_pool=${forge_prune_pool%/}
		forge_is_real_dir "$forge_prune_pool" || continue
		forge_read_file "$forge_prune_pool/source" 2>/dev/null || continue
		[ ! -d "$forge_file" ] || continue
		forge_pool_remove "$forge_prune_pool"
	done
	forge_prune_legacy
	if [ "$forge_prune_kib" -gt 0 ] && [ "$forge_prune_dry" = 1 ]; then
		printf 'would free %s in total\n' "$(forge_human_kib "$forge_prune_kib")"
	elif [ "$forge_prune_kib" -gt 0 ]; then
		printf 'freed %s in total\n' "$(forge_human_kib "$forge_prune_kib")"
	else
		printf 'nothing to prune\n'
	fi
	forge_prune_verbose=0 forge_prune_dry=0
}

# forge_pool_remove POOL: removes the slots of POOL that no run holds, then
# POOL itself once no slot is left.
forge_pool_remove() {
	forge_is_real_dir "$1" || return 0
	for forge_prune_lock in "$1"/*.lock; do
		forge_is_real_file "$forge_prune_lock" || continue
		forge_prune_slot=${forge_prune_lock%.lock}
		# Holding the slot's lock proves no run uses it; the lock file goes
		# last, so a run that starts meanwhile finds the slot gone or whole.
		exec 8>>"$forge_prune_lock" || continue
		if flock -n 8 && forge_pool_lock_held "$forge_prune_lock" 8; then
			for forge_prune_path in "$forge_prune_slot" "$forge_prune_slot.state"; do
				[ -e "$forge_prune_path" ] || [ -L "$forge_prune_path" ] || continue
				forge_prune_note "$forge_prune_path" || continue
				[ "$forge_prune_path" != "$forge_prune_slot" ] || forge_contain_forget "$forge_prune_slot"
				forge_rm_tree "$forge_prune_path" || forge_warn "could not remove $forge_prune_path"
			done
			[ "${forge_prune_dry:-0}" = 1 ] || rm -f -- "$forge_prune_lock"
		else
			forge_warn "warm slot $forge_prune_slot is in use; left alone"
		fi
		exec 8>&-
	done
	set -- "$1" "$1"/*.lock
	[ -e "$2" ] && return 0
	forge_prune_note "$1" || return 0
	forge_rm_tree "$1" || forge_warn "could not remove $1"
}

# forge_prune_legacy: removes what forge before 0.2 left in the git
# directory: its warm pool under forge/pool and the worktree registrations of
# its copies (of cold copies only when their run is gone).
forge_prune_legacy() {
	for forge_prune_admin in "$forge_common_dir"/worktrees/*/; do
		forge_prune_admin=${forge_prune_admin%/}
		forge_is_real_dir "$forge_prune_admin" || continue
		forge_read_file "$forge_prune_admin/gitdir" 2>/dev/null || continue
		case $forge_file in
		*/forge-verify.??????/*/.git)
			forge_prune_tmp=${forge_file%/*/.git}
			if forge_is_real_dir "$forge_prune_tmp"; then
				forge_copy_tmp_alive "$forge_prune_tmp" && continue
				forge_prune_note "$forge_prune_tmp" || continue
				forge_rm_tree "$forge_prune_tmp" || continue
			fi
			;;
		"$forge_common_dir"/forge/pool/*/.git | "$forge_common_real"/forge/pool/*/.git) ;;
		*) continue ;;
		esac
		forge_prune_note "$forge_prune_admin" || continue
		forge_rm_tree "$forge_prune_admin" || :
	done
	for forge_prune_path in "$forge_common_dir/forge/pool" "$forge_common_dir/forge/worktrees.lock"; do
		[ -e "$forge_prune_path" ] || [ -L "$forge_prune_path" ] || continue
		forge_prune_note "$forge_prune_path" || continue
		forge_rm_tree "$forge_prune_path" || :
	done
	[ "${forge_prune_dry:-0}" = 1 ] || rmdir -- "$forge_common_dir/forge" 2>/dev/null || :
}

# --- dependencies and build caches (SPEC 3.5) ------------------------------------

# forge_isolated_detect ROOT: sets forge_detect_setup, forge_detect_keep and
# forge_detect_key (JSON arrays) to what the project type at ROOT needs in a
# copy: npm installs its dependencies (npm ci from a lockfile) into a kept
# node_modules, keyed on the lockfile (or on package.json and .npmrc without
# one); cargo keeps target/. Like step detection (forge_steps_detect), it
# sees only the files a copy would contain.
forge_isolated_detect() {
	forge_detect_setup='[]' forge_detect_keep='[]' forge_detect_key='[]'
	# The same as newline-separated lists, for forge_isolated_plan.
	forge_detect_keep_list='' forge_detect_key_list=''
	# Only these names decide, so only they are looked for (plain names:
	# git's listing needs no -z), in the repository --isolated requires.
	forge_detect_files=$(forge_git -C "$1" ls-files --cached --others --exclude-standard -- \
		package.json package-lock.json npm-shrinkwrap.json Cargo.toml) ||
		forge_die 70 "cannot list the files of $1"
	if forge_detect_has "$1" package.json; then
		forge_detect_keep='["node_modules"]' forge_detect_keep_list=node_modules
		if forge_detect_has "$1" package-lock.json; then
			forge_detect_setup='[{"name":"setup","run":"npm ci"}]'
			forge_detect_key='["package-lock.json"]' forge_detect_key_list=package-lock.json
		elif forge_detect_has "$1" npm-shrinkwrap.json; then
			forge_detect_setup='[{"name":"setup","run":"npm ci"}]'
			forge_detect_key='["npm-shrinkwrap.json"]' forge_detect_key_list=npm-shrinkwrap.json
		else
			forge_detect_setup='[{"name":"setup","run":"npm install"}]'
			forge_detect_key='["package.json",".npmrc"]' forge_detect_key_list='package.json
.npmrc'
		fi
	elif forge_detect_has "$1" Cargo.toml; then
		forge_detect_keep='["target"]' forge_detect_keep_list=target
	fi
}

# forge_isolated_plan ROOT: sets forge_isolated_setup (a JSON array of
# steps), forge_isolated_keep and forge_isolated_key (newline-separated
# paths) from verify.isolated.{setup,keep,setupKey} in the merged
# configuration, each key that is not set there from detection at ROOT. A
# configured setup without a setupKey has no key. Needs forge_config.
forge_isolated_plan() {
	forge_isolated_detect "$1"
	if [ "${forge_config_files:-1}" = 0 ]; then
		# No configuration file: detection alone, without jq.
		forge_isolated_setup=$forge_detect_setup
		forge_isolated_keep=$forge_detect_keep_list
		forge_isolated_key=$forge_detect_key_list
		return 0
	fi
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_plan_out=$(printf '%s' "$forge_config" | jq -r --argjson ds "$forge_detect_setup" \
		--argjson dk "$forge_detect_keep" --argjson dkey "$forge_detect_key" '
		(.verify.isolated // {}) as $i
		| (if $i | has("setup") then [$i.setup, ($i.setupKey // [])]
		   else [$ds, ($i.setupKey // $dkey)] end) as [$setup, $key]
		| ($i.keep // $dk) as $keep
		| ([$setup | to_entries[] | select((.value.run | type) != "string" or .value.run == "") | .key]
		   | first // null) as $bad
		| if $bad != null then "E\tverify.isolated.setup[\($bad)].run: a non-empty shell command is required"
		  else "\($setup | tojson)", "K\($keep | join("\n"))", "\u0001\($key | join("\n"))" end') ||
		forge_die 70 "jq failed while reading verify.isolated"
	case $forge_plan_out in
	"E	"*) forge_die 65 "configuration: key ${forge_plan_out#??}" ;;
	esac
	forge_isolated_setup=${forge_plan_out%%"
"*}
	forge_plan_out=${forge_plan_out#*"
K"}
	forge_plan_sep=$(printf '\001')
	forge_isolated_keep=${forge_plan_out%%"
$forge_plan_sep"*}
	forge_isolated_key=${forge_plan_out#*"$forge_plan_sep"}
}

# forge_isolated_stamp COPY: prints a digest of the setup steps, the keep
# paths and the content of every key file in COPY (a key that is missing or
# not a regular file counts as such; a symbolic link or a FIFO is never read).
forge_isolated_stamp() {
	{
		printf '%s\n' "$forge_isolated_setup" "$forge_isolated_keep"
		forge_list=$forge_isolated_key
		while forge_list_next; do
			printf 'key %s\n' "$forge_item"
			if forge_is_real_file "$1/$forge_item"; then
				sha256sum <"$1/$forge_item"
			else
				echo missing
			fi
		done
	} | sha256sum
}

# forge_isolated_setup_run COPY [STATE]: runs the setup steps in COPY before
# the verify steps, logged like steps (setup-<n>-<name>.log). With STATE (a
# warm slot's folder), only when the stamp (forge_isolated_stamp) differs
# from that of the slot's last successful setup or a keep path that setup
# left is gone. A failing setup step exits 69 (an ERROR, not a FAIL).
forge_isolated_setup_run() {
	[ "$forge_isolated_setup" != '[]' ] || return 0
	forge_require_tool sha256sum
	forge_setup_stamp=$(forge_isolated_stamp "$1") || forge_die 70 "cannot digest the setup keys"
	if [ -n "${2:-}" ] && forge_isolated_setup_current "$1" "$2/setup"; then
		[ "${forge_quiet:-0}" = 1 ] ||
			printf 'Setup: up to date in this warm slot (%s unchanged)\n' \
				"$(printf '%s' "${forge_isolated_key:-the setup}" | forge_printable)" >&2
		return 0
	fi
	[ -z "${2:-}" ] || rm -f -- "$2/setup"
	forge_exec_dir=$1
	forge_setup_saved=${forge_steps:-}
	forge_steps=$forge_isolated_setup
	# One jq run for all the setup steps.
	forge_steps_plan "$forge_default_timeout"
	forge_setup_n=0
	while forge_step_next; do
		forge_setup_n=$((forge_setup_n + 1))
		forge_setup_log=setup-$forge_setup_n-$forge_step_file.log
		# Created as a step's log is: checked, mode 0600.
		forge_run_log "setup-$forge_setup_n" "$forge_step_file"
		forge_step_status=$(printf 'Setup: %s (%s)' "$forge_step_name" "$forge_step_run" | forge_printable)
		forge_step_exec "$forge_run_log" "$forge_step_timeout" sh -c -- "$forge_step_run"
		forge_step_status=
		forge_exit_signal
		# As for a verify step, exit 124 is a timeout only when the step
		# lasted its whole limit.
		case $forge_step_reason in
		'') forge_setup_result=ok ;;
		timeout) forge_setup_result="ERROR timeout" ;;
		*) forge_setup_result="ERROR exit $forge_step_exit" ;;
		esac
		if [ "${forge_quiet:-0}" != 1 ]; then
			printf 'Setup: %s (%s) %s %s' "$forge_step_name" "$forge_step_run" "$forge_setup_result" \
				"$(forge_fmt_secs "$forge_step_ms")" | forge_printable >&2
			[ "$forge_step_exit" = 0 ] || [ "${forge_verbose:-0}" = 1 ] ||
				forge_step_tail | forge_printable_lines '| ' >&2
		fi
		[ "$forge_step_exit" = 0 ] ||
			forge_die 69 "setup step '$forge_step_name' failed ($forge_setup_result): log .forge/runs/$forge_run_id/$forge_setup_log"
	done
	forge_steps=$forge_setup_saved
	[ -n "${2:-}" ] || return 0
	# The stamp, then the keep paths that setup left (their loss means
	# setting up again).
	forge_rm_tree "$2/setup.$$" || forge_die 73 "cannot remove $2/setup.$$"
	{
		printf '%s\n' "$forge_setup_stamp"
		forge_list=$forge_isolated_keep
		while forge_list_next; do
			[ ! -d "$1/$forge_item" ] || printf '%s\n' "$forge_item"
		done
	} >"$2/setup.$$" || forge_die 73 "cannot write $2/setup.$$"
	mv -f -- "$2/setup.$$" "$2/setup" || forge_die 73 "cannot write $2/setup"
}

# forge_isolated_setup_current COPY FILE: true when FILE records the current
# stamp and every keep path it lists is still a folder in COPY.
forge_isolated_setup_current() {
	forge_is_real_file "$2" || return 1
	{
		IFS= read -r forge_current_stamp || return 1
		[ "$forge_current_stamp" = "$forge_setup_stamp" ] || return 1
		while IFS= read -r forge_current_keep; do
			forge_is_real_dir "$1/$forge_current_keep" || return 1
		done
	} <"$2"
}
