# forge-evidence.sh — the files a failing step's output names, kept in the
# run's evidence folder as .forge/runs/<id>/files/<path> (SPEC 3.2).
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_evidence_keep: keeps in the run's evidence folder, as
# .forge/runs/<id>/files/<path>, each file of the folder the step ran in
# (the copy, or the repository in a plain run, where a later run may
# overwrite it) that the last 40 lines of the step's output name (SPEC 3.2):
# only regular files, never through a symbolic link (in that folder or in
# .forge), nothing of .git or .forge, 10 MB in all; nothing in a --sandbox
# run (the files are the sandbox's, and it may still be running). Sets
# forge_evidence_shown to the lines that say what was kept (empty with -q).
forge_evidence_keep() {
	local dir real left seen path line
	forge_evidence_shown=
	# Never what a sandboxed step wrote: a process it left running can swap a
	# folder for a link between forge's check and its copy, and the host
	# would copy a file of its own into .forge, where the sandbox reads it.
	[ -z "${forge_contain_name:-}" ] || return 0
	dir=$forge_exec_dir
	real=$(cd -P -- "$dir" 2>/dev/null && pwd -P) || return 0
	left=10485760 seen='
'
	# jq picks out of the step's last lines every path that may name a file
	# of the copy, one a line, relative to its root: what follows the copy's
	# folder ($copy, $real: its physical path) up to a delimiter, and each
	# run of text between delimiters (spaces only inside it, six at most, so
	# names with spaces count) that holds a "/" or a "." and does not start
	# with "/". A trailing "." (the end of a sentence) and a leading "./" go.
	forge_list=$(forge_step_tail | jq -R -r -s --arg copy "$dir" --arg real "$real" '
	def cuts: . as $s | [range(0; length) as $i | select(" \t\"'"'"'`()[]{}<>,;:=|" | index($s[$i:$i + 1]) != null) | $i];
	def spans: . as $s | cuts as $c | ($c | length) as $n
		| range(-1; $n) as $k | range($k + 1; [$k + 7, $n] | min + 1) as $m
		| (if $k < 0 then 0 else $c[$k] + 1 end) as $from
		| (if $m == $n then ($s | length) else $c[$m] end) as $to
		| select($to > $from and $to - $from <= 1024) | $s[$from:$to];
	def firsts: . as $s | cuts as $c | ($c[:7] + [$s | length])[] | $s[:.];
	def tidy: ltrimstr("./") | (., rtrimstr("."));
	[ split("\n")[] as $l
	  | ( ([$copy, $real] | unique[] | . + "/") as $p
	      | $l | split($p)[1:][] | firsts | tidy ),
	    ( $l | spans | select(test("^/|[\t\"'"'"'`()\\[\\]{}<>,;:=|]") | not) | select(test("[/.]")) | tidy ) ]
	| unique[] | select(length > 0 and (test("[\u0000-\u001f\u007f]") | not))' 2>/dev/null) || return 0
	while forge_list_next; do
		path=$forge_item
		case $seen in *"
$path
"*) continue ;; esac
		seen=$seen$path'
'
		case /$path/ in
		*//* | */./* | */../* | /.git/* | /.forge/*) continue ;;
		esac
		forge_evidence_file "$real" "$path" "$left" || continue
		left=$((left - forge_evidence_size))
		[ "${forge_quiet:-0}" = 1 ] && continue
		if [ "$dir" != "${forge_copy_dir:-}" ]; then
			line=$(printf 'kept: %s as .forge/runs/%s/files/%s' "$path" "$forge_run_id" "$path" | forge_printable)
		else
			line=$(printf 'kept: %s (in the copy: %s/%s) as .forge/runs/%s/files/%s' "$path" \
				"$dir" "$path" "$forge_run_id" "$path" | forge_printable)
		fi
		forge_evidence_shown="$forge_evidence_shown$line
"
	done
}

# forge_evidence_file REAL PATH LEFT: copies REAL/PATH (REAL: the physical
# path of the folder the step ran in) to the run's evidence folder when it is
# a regular file reached through real folders only and holds at most LEFT
# bytes; sets forge_evidence_size to its size. Returns 1 otherwise.
forge_evidence_file() {
	local real="$1" left="$3" parent base dest at rest size
	shift
	parent=${1%/*} base=${1##*/}
	[ "$parent" != "$1" ] || parent=
	dest=$forge_run_dir/files/$1
	# Most candidates name nothing: told apart without a process.
	[ -f "$real/$1" ] || return 1
	forge_state_path "$dest" file || return 1
	# The file, checked from inside its folder once the shell stands in it
	# (its physical path checked: no folder on the way was a link), and its
	# size by find (which opens nothing).
	(
		cd -P -- "$real${parent:+/$parent}" 2>/dev/null || exit 1
		[ "$(pwd -P)" = "$real${parent:+/$parent}" ] || exit 1
		forge_is_real_file "./$base" || exit 1
		[ -n "$(find "./$base" -prune -type f -size -"$((left + 1))"c)" ]
	) || return 1
	# The folders on the way, made one by one, each checked.
	at=$forge_run_dir/files rest=$parent
	while :; do
		forge_state_path "$at" dir || return 1
		[ -d "$at" ] || mkdir -m 700 -- "$at" 2>/dev/null || return 1
		[ -n "$rest" ] || break
		at=$at/${rest%%/*}
		case $rest in */*) rest=${rest#*/} ;; *) rest= ;; esac
	done
	! forge_path_exists "$dest" || return 1
	# cp -P copies a link as a link (checked below, then removed); bounded,
	# since a FIFO put in the file's place meanwhile would block it.
	forge_helper_path forge-timeout
	(
		cd -P -- "$real${parent:+/$parent}" 2>/dev/null || exit 1
		umask 077
		exec "$forge_helper" -k 1 10 cp -P -- "./$base" "$dest"
	) </dev/null >/dev/null 2>&1 || { rm -f -- "$dest"; return 1; }
	if ! forge_is_real_file "$dest"; then
		rm -f -- "$dest"
		return 1
	fi
	size=$(wc -c <"$dest") || size=$left
	size=${size##*[!0-9]}
	if [ "$size" -gt "$left" ]; then
		rm -f -- "$dest"
		return 1
	fi
	chmod 600 -- "$dest" 2>/dev/null || :
	forge_evidence_size=$size
}
