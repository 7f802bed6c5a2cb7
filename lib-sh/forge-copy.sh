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
# Filling the copy with the working state is forge-copy-fill.sh's.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

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

# --- the copy's own repository --------------------------------------------------

# forge_copy_require_head ROOT: sets forge_head, forge_common_dir and the
# physical paths forge_root_real and forge_common_real; exits 69 when the
# repository has no commit yet.
forge_copy_require_head() {
	[ "${forge_head_of:-}" = "$1" ] || forge_head "$1"
	[ -n "$forge_head" ] || forge_die 69 "--isolated needs a commit; $1 has none yet"
	forge_require_tool flock tar xargs
	forge_git_common_dir "$1" || forge_die 69 "cannot find the git directory of $1"
	forge_real_dir "$1" || forge_die 69 "cannot resolve $1"
	forge_root_real=$forge_real
	forge_real_dir "$forge_common_dir" || forge_die 69 "cannot resolve $forge_common_dir"
	forge_common_real=$forge_real
}

# forge_alt_line PATH: prints PATH as a line of an alternates file: C-quoted
# when it holds a newline or starts with a double quote.
forge_alt_line() {
	local alt c rest
	case $1 in
	*'
'* | '"'*) ;;
	*) printf '%s\n' "$1"; return ;;
	esac
	rest=$1 alt=
	while [ -n "$rest" ]; do
		c=${rest%"${rest#?}"}
		rest=${rest#?}
		case $c in
		\\) alt="$alt\\\\" ;;
		\") alt="$alt\\\"" ;;
		'
') alt="$alt\\n" ;;
		*) alt=$alt$c ;;
		esac
	done
	printf '"%s"\n' "$alt"
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

# forge_copy_repo ROOT COPY SCRATCH [SAVED]: (re)creates COPY/.git as a
# repository of its own: no hooks, the source's objects borrowed read-only
# (alternates, the stores recorded in forge_copy_stores for the copy's
# sandbox), its refs (less the stash) as packed refs, HEAD on the same branch
# (or detached), its shallow file and info/exclude, and the carried
# configuration. Whatever COPY/.git held before is removed first (a symbolic
# link as a link) and git init makes it anew; but with SAVED (a warm slot's
# file, outside the copy, holding what git init wrote in its config), a
# COPY/.git that holds nothing but what this function and the checkout
# write (forge_copy_git_reusable) is kept and each of its files written
# again in place: steps may have written any of them. SCRATCH holds
# intermediate files.
forge_copy_repo() {
	local entry alts carried carry cfg file gd objects
	# The local configuration that decides how files are checked out (and
	# who commits), carried from the source into the copy; and the program
	# xargs -0 runs over the "key<LF>value" entries of git config -z, $1 the
	# config file to write (the values passed as data).
	carried='^(filter\..*|lfs\..*|core\.(autocrlf|eol|safecrlf|checkroundtripencoding|symlinks|ignorecase|precomposeunicode)|user\.(name|email)|extensions\.objectformat)$'
	# shellcheck disable=SC2016 # a program for sh -c through xargs, not expanded here
	carry='cfg=$1; shift
nl="
"
for e; do
	case $e in *"$nl"*) k=${e%%"$nl"*} v=${e#*"$nl"} ;; *) k=$e v=true ;; esac
	git config -f "$cfg" --add -- "$k" "$v" || exit 1
	if [ "$k" = extensions.objectformat ]; then
		git config -f "$cfg" core.repositoryformatversion 1 || exit 1
	fi
done'
	# Where the source's objects are, as git finds them.
	objects=${GIT_OBJECT_DIRECTORY:-$forge_common_dir/objects}
	gd=$2/.git
	if [ -n "${4:-}" ] && forge_copy_git_reusable "$gd" && forge_is_real_file "$4" &&
		forge_read_file "$4" && [ -n "$forge_file" ]; then
		printf '%s\n' "$forge_file" >"$gd/config" || forge_die 73 "cannot write $gd/config"
	else
		forge_rm_tree "$gd" || forge_die 73 "cannot remove $gd"
		forge_copy_git "$2" init --quiet --template= . >/dev/null 2>"$3/git.err" ||
			forge_die 74 "cannot create the copy's repository: $(cat "$3/git.err")"
		mkdir -p -- "$gd/objects/info" "$gd/info" ||
			forge_die 73 "cannot write in $gd"
		if [ -n "${4:-}" ]; then
			# What git init found out about the file system (file modes,
			# symbolic links, case), for the next runs of this slot.
			{ forge_read_file "$gd/config" && forge_clear_for_file "$4" &&
				printf '%s\n' "$forge_file" >"$4"; } || rm -f -- "$4"
		fi
	fi
	# The stores the copy borrows, recorded as written (forge_copy_stores):
	# the sandbox of a copy mounts these, never what an alternates file says.
	forge_copy_stores=
	{
		forge_alt_line "$objects"
		forge_copy_store "$objects"
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
	forge_source_git "$1" config --local --includes -z --get-regexp "$carried" \
		>"$3/config" 2>/dev/null || :
	if [ -s "$3/config" ]; then
		(forge_git_env_unset && exec xargs -0 -r sh -c "$carry" sh "$cfg") \
			<"$3/config" >/dev/null 2>"$3/git.err" ||
			forge_die 74 "cannot carry the repository's configuration into the copy: $(cat "$3/git.err")"
	fi
	# Refs: every ref of the source, the stash left out (it lives in a
	# reflog); HEAD on the branch git marks as the source's HEAD (%(HEAD))
	# when that branch holds the commit checked out, else detached. ORIG_HEAD
	# is what the checkout's reset leaves (forge_copy_checkout).
	forge_source_git "$1" for-each-ref --format='%(objectname) %(refname) %(HEAD)' >"$3/refs" 2>"$3/git.err" ||
		forge_die 74 "cannot list the refs of $1: $(cat "$3/git.err")"
	awk -v head="$forge_head" -v headfile="$gd/HEAD" '
		$2 != "refs/stash" { print $1 " " $2 }
		$3 == "*" && $1 == head { branch = $2 }
		END {
			if (branch != "") print "ref: " branch >headfile
			else print head >headfile
			if (close(headfile) != 0) exit 1
		}' <"$3/refs" >"$gd/packed-refs" || forge_die 73 "cannot write $gd/HEAD"
	printf '%s\n' "$forge_head" >"$gd/ORIG_HEAD" || forge_die 73 "cannot write $gd/ORIG_HEAD"
	for file in shallow info/exclude; do
		if forge_is_real_file "$forge_common_dir/$file"; then
			cp -- "$forge_common_dir/$file" "$gd/$file" ||
				forge_die 73 "cannot write $gd/$file"
		fi
	done
}

# forge_copy_git_reusable GITDIR: true when the folder GITDIR (a warm slot's
# copy's .git) holds exactly what forge_copy_repo and the checkout write, and
# nothing a step could have added: regular files HEAD, ORIG_HEAD, config,
# packed-refs, index, shallow and info/exclude (these two only when the
# source has them), objects/info/alternates, and the empty folders
# objects/pack, refs/heads and refs/tags; every folder a real one (no
# symbolic link, nothing that would be followed or block when opened).
# Anything else (hooks, loose refs or objects, logs, a commondir, a
# sparse-checkout, a link) and the caller makes GITDIR anew.
forge_copy_git_reusable() {
	local e
	forge_is_real_dir "$1" || return 1
	for e in "$1"/* "$1"/.[!.]* "$1"/..?*; do
		forge_path_exists "$e" || continue
		case ${e##*/} in
		HEAD | ORIG_HEAD | config | packed-refs | index) forge_is_real_file "$e" || return 1 ;;
		shallow)
			forge_is_real_file "$e" && forge_is_real_file "$forge_common_dir/shallow" || return 1 ;;
		objects | refs | info) forge_is_real_dir "$e" || return 1 ;;
		*) return 1 ;;
		esac
	done
	forge_copy_dir_holds "$1/objects" info pack &&
		forge_copy_dir_holds "$1/objects/info" alternates &&
		forge_is_real_file "$1/objects/info/alternates" &&
		forge_copy_dir_holds "$1/objects/pack" &&
		forge_copy_dir_holds "$1/refs" heads tags &&
		forge_copy_dir_holds "$1/refs/heads" &&
		forge_copy_dir_holds "$1/refs/tags" || return 1
	if forge_is_real_file "$forge_common_dir/info/exclude"; then
		forge_copy_dir_holds "$1/info" exclude && forge_is_real_file "$1/info/exclude"
	else
		forge_copy_dir_holds "$1/info"
	fi
}

# forge_copy_dir_holds DIR [NAME...]: true when DIR is a real folder whose
# entries are among the NAMEs (those that are folders real ones).
forge_copy_dir_holds() {
	local dir e n ok
	dir=$1
	shift
	forge_is_real_dir "$dir" || return 1
	for e in "$dir"/* "$dir"/.[!.]* "$dir"/..?*; do
		forge_path_exists "$e" || continue
		ok=
		for n; do
			[ "${e##*/}" != "$n" ] || ok=1
		done
		[ -n "$ok" ] || return 1
		[ ! -d "$e" ] || forge_is_real_dir "$e" || return 1
	done
}

# forge_copy_checkout COPY ERRFILE [INDEX [SAME]]: checks HEAD out in COPY,
# with the index file INDEX when given (a warm slot's own), else COPY's. The
# index, if any, only tells git which files it can leave alone: a file whose
# stat data still matches its entry is not rewritten). The stat data is
# compared in full whatever the user's configuration says (ctime included: a
# write always changes it, and no step can set it back), so a file a step
# touched never passes for clean; one touched in the second its entry was
# recorded is "racy" and compared by content, provided the index file keeps
# the time it was written (git's racy-git rule). With SAME (INDEX is HEAD's
# tree already: a warm slot's index checked out at this very commit) the
# files are restored from the index, by the same rules, without reading
# HEAD's trees (checkout-index; untracked files are the clean's). No reflog
# entry is written (the copy's .git stays as forge_copy_repo made it). The
# files are written by as many workers as there are cores (git's parallel
# checkout, from 100 files on): writing small files waits on the disk more
# than on the CPU, and a checkout of 5,000 files took a third of the time.
forge_copy_checkout() {
	if [ -n "${4:-}" ]; then
		forge_index_git "$3" '' "$1" -c core.trustctime=true -c core.checkStat=default -c core.ignoreStat=false \
			-c core.untrackedCache=false -c checkout.workers=0 checkout-index --all --force --index >"$2" 2>&1
		return
	fi
	forge_index_git "${3:-$1/.git/index}" '' "$1" -c core.trustctime=true -c core.checkStat=default -c core.ignoreStat=false \
		-c core.untrackedCache=false -c core.logAllRefUpdates=false -c checkout.workers=0 reset --hard --quiet >"$2" 2>&1
}

# forge_copy_links_check COPY LIST: exits 74, before anything is written,
# when a path of the NUL-separated LIST would be written through a symbolic
# link in COPY: a tracked symlink of HEAD that the user replaced with a folder
# and hid with --assume-unchanged or --skip-worktree, say. (The fill's check
# of the untracked files, forge_copy_fill.)
forge_copy_links_check() {
	local bad check
	# Prints the first path that is, or lies under, a symbolic link in the
	# copy $1, and fails. Each file's folder is checked upwards until one
	# known to be clean.
	# shellcheck disable=SC2016 # a program for sh -c through xargs, not expanded here
	check='copy=$1; shift
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
	bad=$(xargs -0 -r sh -c "$check" sh "$1" <"$2") && return 0
	[ -n "$bad" ] || forge_die 74 "cannot check the untracked files against the copy"
	forge_die 74 "'$bad' is a symbolic link in HEAD but a folder in the working tree (hidden with --assume-unchanged or --skip-worktree?): the copy would be written through it"
}

# --- cold copies ----------------------------------------------------------------

# forge_copy_create ROOT: makes a cold copy of ROOT's working state. Sets
# forge_copy_tmp (the temporary folder), forge_copy_dir (the copy's root) and
# forge_copy_tree (the tree of the verified snapshot). Exits 69 without a
# commit, 73 when TMPDIR is unusable or inside the repository, 74 when the
# copy cannot be made faithfully.
forge_copy_create() {
	local base name
	[ -z "${forge_copy_tmp:-}" ] ||
		forge_die 70 "a copy exists already ($forge_copy_tmp): forge_copy_destroy it first"
	forge_copy_require_head "$1"
	# The folder cold copies go in: TMPDIR (made absolute against the
	# current directory, as mktemp would use it), else /tmp; checked to exist
	# and to lie outside the repository.
	base=${TMPDIR:-/tmp}
	case $base in
	/*) ;;
	*) base=$(pwd)/$base ;;
	esac
	[ -d "$base" ] || forge_die 73 "TMPDIR $base is not a folder"
	forge_copy_place_check "$base" 'TMPDIR'
	forge_copy_prune "$base"
	# Named after this process (see forge_copy_tmp_alive); mkdir, not
	# mktemp, so the name says whose it is from the instant it exists. One
	# left by an earlier process with the same PID is dead by definition.
	forge_copy_tmp=$base/forge-verify.$(printf '%06x' "$$")
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
	forge_copy_scan "$1" "$forge_copy_tmp"
	forge_copy_repo "$1" "$forge_copy_dir" "$forge_copy_tmp"
	forge_copy_checkout "$forge_copy_dir" "$forge_copy_tmp/git.err" ||
		forge_die 74 "cannot check out HEAD into the copy: $(cat "$forge_copy_tmp/git.err")"
	forge_copy_fill "$1" "$forge_copy_dir" "$forge_copy_tmp"
}

# forge_copy_destroy: removes the cold copy. Safe to call more than once and
# on a half-made copy.
forge_copy_destroy() {
	forge_copy_scan_reap
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
