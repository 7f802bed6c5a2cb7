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
# after the run; a warm slot of the pool (forge-pool.sh) is filled the same
# way. Neither may lie inside the source repository, where tools that search
# parent folders (node_modules, go.work, .git) would find the real tree.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)

# --- where copies live ----------------------------------------------------------

# forge_copy_place_check DIR WHAT: exits 73 when the folder DIR (or, while
# it does not exist, its nearest existing parent) lies inside the source's
# work tree or git directory (forge_root_real, forge_common_real): from a
# copy there, tools that search parent folders would find the real
# repository. Checked before anything is created there.
forge_copy_place_check() {
	local place
	place=$1
	while [ ! -d "$place" ] && [ -n "$place" ]; do
		place=${place%/*}
	done
	forge_real_dir "${place:-/}" || forge_die 73 "cannot use the $2 $1"
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

# --- the copy's own repository --------------------------------------------------

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
	local c rest
	case $1 in
	*'
'* | '"'*) ;;
	*) forge_alt=$1; return 0 ;;
	esac
	rest=$1 forge_alt=
	while [ -n "$rest" ]; do
		c=${rest%"${rest#?}"}
		rest=${rest#?}
		case $c in
		\\) forge_alt="$forge_alt\\\\" ;;
		\") forge_alt="$forge_alt\\\"" ;;
		'
') forge_alt="$forge_alt\\n" ;;
		*) forge_alt=$forge_alt$c ;;
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
	local entry alts branch cfg file gd
	forge_copy_texts
	gd=$2/.git
	forge_rm_tree "$gd" || forge_die 73 "cannot remove $gd"
	forge_copy_git "$2" init --quiet --template= . >/dev/null 2>"$3/git.err" ||
		forge_die 74 "cannot create the copy's repository: $(cat "$3/git.err")"
	mkdir -p -- "$gd/objects/info" "$gd/info" ||
		forge_die 73 "cannot write in $gd"
	# The stores the copy borrows, recorded as written (forge_copy_stores):
	# the sandbox of a copy mounts these, never what an alternates file says.
	forge_copy_stores=
	{
		forge_alt_line "$forge_objects_dir"
		printf '%s\n' "$forge_alt"
		forge_copy_store "$forge_objects_dir"
		# Objects a caller lends the source (a quarantine, say), absolute
		# entries only: git resolves relative ones against the source.
		alts=${GIT_ALTERNATE_OBJECT_DIRECTORIES:-}
		while [ -n "$alts" ]; do
			entry=${alts%%:*}
			case $alts in *:*) alts=${alts#*:} ;; *) alts= ;; esac
			case $entry in /*) printf '%s\n' "$entry" && forge_copy_store "$entry" ;; esac
		done
	} >"$gd/objects/info/alternates" || forge_die 73 "cannot write in $gd"
	# The configuration: what checks files out as the source does; and never a
	# split index or fsmonitor from the user's global configuration, which
	# would tie the index to files outside it.
	cfg=$gd/config
	# (A section of its own after the one git init wrote: no git config
	# process needed.)
	printf '[core]\n\tsplitIndex = false\n\tfsmonitor = false\n' >>"$cfg" ||
		forge_die 73 "cannot write $cfg"
	: >"$3/config"
	forge_source_git "$1" config --local --includes -z --get-regexp "$forge_carried_config" \
		>"$3/config" 2>/dev/null || :
	if [ -s "$3/config" ]; then
		(forge_git_env_unset && exec xargs -0 -r sh -c "$forge_carry_config_sh" sh "$cfg") \
			<"$3/config" >/dev/null 2>"$3/git.err" ||
			forge_die 74 "cannot carry the repository's configuration into the copy: $(cat "$3/git.err")"
	fi
	# Refs: every ref of the source, the stash left out (it lives in a reflog).
	forge_source_git "$1" for-each-ref --format='%(objectname) %(refname)' >"$3/refs" 2>"$3/git.err" ||
		forge_die 74 "cannot list the refs of $1: $(cat "$3/git.err")"
	grep -v ' refs/stash$' <"$3/refs" >"$gd/packed-refs" || :
	branch=$(forge_source_git "$1" symbolic-ref -q HEAD 2>/dev/null) || branch=
	if [ -n "$branch" ] && grep -qxF -- "$forge_head $branch" "$3/refs"; then
		printf 'ref: %s\n' "$branch" >"$gd/HEAD"
	else
		printf '%s\n' "$forge_head" >"$gd/HEAD"
	fi || forge_die 73 "cannot write $gd/HEAD"
	for file in shallow info/exclude; do
		if forge_is_real_file "$forge_common_dir/$file"; then
			cp -- "$forge_common_dir/$file" "$gd/$file" ||
				forge_die 73 "cannot write $gd/$file"
		fi
	done
}

# forge_copy_checkout COPY ERRFILE [INDEX]: checks HEAD out in COPY, with
# the index file INDEX when given (a warm slot's own), else COPY's. The index,
# if any, only tells git which files it can leave alone: a file whose stat data
# still matches its entry is not rewritten). The stat data is compared in
# full whatever the user's configuration says (ctime included: a write
# always changes it, and no step can set it back), so a file a step touched
# never passes for clean; one touched in the second its entry was recorded
# is "racy" and compared by content, provided the index file keeps the time
# it was written (git's racy-git rule).
forge_copy_checkout() {
	forge_index_git "${3:-$1/.git/index}" '' "$1" -c core.trustctime=true -c core.checkStat=default -c core.ignoreStat=false \
		-c core.untrackedCache=false reset --hard --quiet >"$2" 2>&1
}

# --- filling the copy -----------------------------------------------------------

# forge_copy_fill ROOT COPY SCRATCH [OBJECTS]: replays ROOT's uncommitted
# changes and untracked files into COPY (a checkout of HEAD) and computes the
# snapshot's tree into forge_copy_tree (its objects in OBJECTS: see
# forge_copy_snapshot_tree). SCRATCH holds the patch and the file lists.
forge_copy_fill() {
	local patch
	patch=$3/changes.patch
	! forge_path_exists "$3/tar.failed" || rm -f -- "$3/tar.failed"
	# Flags that user configuration cannot reshape: no colour, no external
	# diff or textconv, full binary patches, standard a/ b/ prefixes, fixed
	# context, submodules left alone.
	forge_source_git "$1" diff HEAD --binary --full-index --no-color --no-ext-diff \
		--no-textconv --no-renames --ignore-submodules=all --unified=3 \
		--src-prefix=a/ --dst-prefix=b/ --output="$patch" 2>"$3/git.err" ||
		forge_die 74 "cannot compute the uncommitted changes: $(cat "$3/git.err")"
	if [ -s "$patch" ]; then
		# git apply checks every path first, a path beyond a symbolic link
		# included, and writes nothing unless all of them apply.
		forge_git_apply "$2" "$patch" 2>"$3/git.err" ||
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
	local bad
	forge_copy_texts
	bad=$(xargs -0 -r sh -c "$forge_links_check_sh" sh "$1" <"$2") && return 0
	[ -n "$bad" ] || forge_die 74 "cannot check the untracked files against the copy"
	forge_die 74 "'$bad' is a symbolic link in HEAD but a folder in the working tree (hidden with --assume-unchanged or --skip-worktree?): the copy would be written through it"
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

# forge_copy_snapshot_tree COPY SCRATCH [OBJECTS]: sets forge_copy_tree to
# the tree of HEAD + the patch + the untracked files, built in a scratch
# index read from HEAD's tree (with its cached trees), so only what changed
# is hashed. The objects go to the folder
# OBJECTS (made when missing; a warm slot keeps its own outside the copy, so
# that the copy's .git stays small to remove and remake), else to the
# copy's, never to the source.
forge_copy_snapshot_tree() {
	local index="$2/index" objects="${3:-}"
	if [ -n "$objects" ] && ! forge_is_real_dir "$objects"; then
		forge_rm_tree "$objects" || forge_die 73 "cannot remove $objects"
		mkdir -p -- "$objects" || forge_die 73 "cannot create $objects"
	fi
	{
		# HEAD's tree read afresh (its cached trees come with it): entries
		# without stat data, never "racily clean", so no index write of the
		# scratch index hashes the files just checked out again.
		# (SCRATCH is new, so there is no index to remove; and read-tree
		# without -m never reads one.)
		forge_index_git "$index" "$objects" "$1" read-tree "$forge_head" &&
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

# --- cold copies ----------------------------------------------------------------

# forge_copy_create ROOT: makes a cold copy of ROOT's working state. Sets
# forge_copy_tmp (the temporary folder), forge_copy_dir (the copy's root) and
# forge_copy_tree (the tree of the verified snapshot). Exits 69 without a
# commit, 73 when TMPDIR is unusable or inside the repository, 74 when the
# copy cannot be made faithfully.
forge_copy_create() {
	local name
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
		if ! forge_is_real_dir "$forge_copy_tmp" ||
			! forge_rm_tree "$forge_copy_tmp" || ! mkdir -m 700 -- "$forge_copy_tmp"; then
			forge_die 73 "cannot create the folder $forge_copy_tmp"
		fi
	fi
	forge_owner >"$forge_copy_tmp/owner" || forge_die 73 "cannot write in $forge_copy_tmp"
	name=${1##*/}
	forge_copy_dir=$forge_copy_tmp/${name:-repo}-${forge_copy_tmp##*.}
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
