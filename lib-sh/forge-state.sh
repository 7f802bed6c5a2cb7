# forge-state.sh — forge's evidence on the real repository: .forge/ with the
# breaker state, the timeline, per-run logs and per-change reports (SPEC 3.3,
# 3.4). All updates go through the forge-state helper (flock + atomic rename),
# and every path under .forge/ passes forge_state_path first.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_state_path PATH file|dir: the one rule for what forge may create,
# write, append to, delete or read as state under .forge/ (SPEC section 2;
# .forge/ may come from a hostile clone). PATH must lie in forge_state_dir;
# .forge itself and every folder between it and PATH must be a real folder
# or missing (to be created), never a symbolic link; PATH itself must be
# missing or, without being a symbolic link, a regular file (file) or a
# folder (dir), so never a FIFO or a device. Returns 1 with the reason in
# forge_state_refusal otherwise.
# Between this check and the write, a process of the user's own could swap
# a folder for a link; forge-state itself never follows a link nor opens
# anything but a regular file at the last component.
forge_state_path() {
	local kind name path rest
	forge_state_refusal=
	case ${forge_state_dir:-} in
	/?*) ;;
	*)
		forge_state_refusal="forge_state_dir is not set to an absolute path"
		return 1
		;;
	esac
	case $1 in
	"$forge_state_dir" | "$forge_state_dir"/*) ;;
	*)
		forge_state_refusal="$1 is not inside $forge_state_dir"
		return 1
		;;
	esac
	path=$forge_state_dir
	rest=${1#"$forge_state_dir"}
	while :; do
		kind=dir
		[ -n "$rest" ] || kind=$2
		if [ -L "$path" ]; then
			forge_state_refusal="$path is a symbolic link; forge never writes or deletes through one"
			return 1
		fi
		if [ "$kind" = dir ]; then
			if [ -e "$path" ] && [ ! -d "$path" ]; then
				forge_state_refusal="$path is $(forge_file_kind "$path"), not a folder"
				return 1
			fi
		elif [ -e "$path" ] && [ ! -f "$path" ]; then
			forge_state_refusal="$path is $(forge_file_kind "$path"), not a regular file"
			return 1
		fi
		[ -n "$rest" ] || return 0
		rest=${rest#/}
		name=${rest%%/*}
		case $name in
		'' | . | ..)
			forge_state_refusal="$1 is not a plain path inside $forge_state_dir"
			return 1
			;;
		esac
		path=$path/$name
		case $rest in
		*/*) rest=/${rest#*/} ;;
		*) rest= ;;
		esac
	done
}

# forge_state_require PATH file|dir: forge_state_path, or exit 73 naming PATH.
forge_state_require() {
	forge_state_path "$@" || forge_die 73 "$forge_state_refusal"
}

# forge_state_file OP FILE ARG...: forge-state OP on FILE, a state file under
# .forge/, once forge_state_require allows it.
forge_state_file() {
	forge_state_require "$2" file
	forge_state "$@"
}

# forge_state_init ROOT [CHANGE]: sets forge_state_dir to ROOT/.forge and
# makes sure it exists with its runs/ and changes/ folders (mode 0700 when
# forge creates them); the first time, adds /.forge/ to info/exclude. Exits
# 73 when a folder cannot be created, or when it, the breaker, the timeline
# or the record of change CHANGE is not one forge may write: before a run
# starts rather than half-way through recording it.
forge_state_init() {
	local dir
	forge_state_dir=$1/.forge
	forge_state_require "$forge_state_dir/breaker" file
	forge_state_require "$forge_state_dir/timeline.jsonl" file
	[ -z "${2:-}" ] || forge_state_require "$forge_state_dir/changes/$2.json" file
	set --
	for dir in "$forge_state_dir" "$forge_state_dir/runs" "$forge_state_dir/changes"; do
		forge_state_require "$dir" dir
		[ -d "$dir" ] || set -- "$@" "$dir"
	done
	[ "$#" -gt 0 ] || return 0
	if [ "$1" = "$forge_state_dir" ]; then
		forge_exclude_forge_dir "${forge_state_dir%/.forge}" ||
			forge_die 73 "cannot add /.forge/ to the repository's info/exclude"
	fi
	# One mkdir for what is missing, parents first. A concurrent run may
	# have made some meanwhile: each is checked again.
	mkdir -m 700 -- "$@" 2>/dev/null || :
	for dir in "$@"; do
		[ -d "$dir" ] || forge_die 73 "cannot create $dir"
		forge_state_require "$dir" dir
	done
}

# forge_run_begin: starts a run: sets forge_run_id, forge_run_dir, forge_ts
# and forge_mono_ms. Its log folder is made by forge_run_folder once steps
# are going to run (a reused verdict, SPEC 3.7, runs none and leaves none:
# an empty folder would count for retention and push out real evidence).
forge_run_begin() {
	forge_clock
	forge_run_id=$forge_stamp-$$
	forge_run_dir=$forge_state_dir/runs/$forge_run_id
}

# forge_run_folder: creates the log folder of the run forge_run_begin
# started (mode 0700) with its owner file (this process's PID and start
# time: see forge_run_alive).
forge_run_folder() {
	forge_state_require "$forge_run_dir" dir
	mkdir -m 700 -- "$forge_run_dir" 2>/dev/null ||
		forge_die 73 "cannot create $forge_run_dir"
	forge_owner >"$forge_run_dir/.owner" ||
		forge_die 73 "cannot write $forge_run_dir/.owner"
}

# forge_run_log N NAME: sets forge_run_log to the log file of step N (NAME
# reduced to a file name) in the run's folder, created empty with mode 0600:
# step output can hold secrets.
forge_run_log() {
	forge_run_log=$forge_run_dir/$1-$2.log
	forge_state_require "$forge_run_log" file
	(umask 077 && : >>"$forge_run_log") 2>/dev/null ||
		forge_die 73 "cannot create $forge_run_log"
}

# forge_is_run_id NAME: true for the name of a run folder forge made:
# <YYYYmmddTHHMMSSZ>-<PID>.
forge_is_run_id() {
	case $1 in
	[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z-[0-9]*) ;;
	*) return 1 ;;
	esac
	forge_is_uint "${1#*Z-}" && [ "${#1}" -le 32 ]
}

# forge_run_alive DIR: true while the run that owns the folder DIR may still
# be going: its owner file names a live process (PID and start time, so a
# recycled PID does not count), or, before the owner file is written, the
# PID in DIR's name is alive. Never decided by the order of names: clocks go
# back and concurrent runs start in any order.
forge_run_alive() {
	forge_owner_alive "$1/.owner" "${1##*Z-}"
}

# forge_runs_finished: sets forge_runs_finished to the run folders (their
# names, separated by spaces: run IDs hold none) that are finished, so that
# retention may remove them; empty before the configuration is known.
# Decided by each folder's owner, never by the order of names.
forge_runs_finished() {
	local dir
	forge_runs_finished=
	[ -n "${forge_keep_runs:-}" ] || return 0
	for dir in "$forge_state_dir"/runs/*; do
		forge_is_run_id "${dir##*/}" || continue
		forge_is_real_dir "$dir" || continue
		forge_run_alive "$dir" ||
			forge_runs_finished="$forge_runs_finished ${dir##*/}"
	done
}

# forge_runs_kept_sources COUNT [CHANGE]: prints what retention reads to know
# the runs it keeps (forge_runs_kept_ids reads the run IDs out of it): the
# last COUNT verify records of the timeline (appended in the order runs
# finished, whatever the clock said; forge_record asks for one less than
# forge_keep_runs, its own record being the last) and every
# .forge/changes/<ID>.json but CHANGE's (which the record about to be
# written replaces). Returns 1 when that cannot be known (then nothing may
# be pruned).
forge_runs_kept_sources() {
	local change count timeline
	count=$1 change=${2:-}
	timeline=$forge_state_dir/timeline.jsonl
	forge_state_path "$timeline" file || return 1
	forge_state_path "$forge_state_dir/changes" dir || return 1
	if [ -f "$timeline" ] && [ "$count" -gt 0 ]; then
		# -a: a line that is not UTF-8 (a character cut short) would make
		# grep, in a UTF-8 locale, print "binary file matches" instead of
		# the records, and retention remove the runs they keep.
		grep -a -F '"event":"verify"' -- "$timeline" | tail -n "$count" || return 1
	fi
	# Most repositories have no change record: no find for them.
	set -- "$forge_state_dir"/changes/*.json
	if [ "$#" -eq 1 ]; then
		forge_path_exists "$1" || return 0
		[ "$1" != "$forge_state_dir/changes/$change.json" ] || return 0
	fi
	find "$forge_state_dir/changes" -mindepth 1 -maxdepth 1 -type f -name '*.json' \
		! -name "${change:-.}.json" -exec cat -- {} + || return 1
}

# forge_runs_kept_ids: sets forge_runs_kept from forge_runs_kept_sources,
# one run ID per line between newlines, with one jq run of its own (the
# record's jq run reads them itself: see forge_record).
forge_runs_kept_ids() {
	forge_runs_kept=$(forge_runs_kept_sources "$forge_keep_runs" | jq -R -r 'fromjson? | objects | .run, (.reused | objects | .run) | strings') || return 1
	forge_runs_kept="
$forge_runs_kept
"
}

# forge_runs_prune [found]: removes the folders of finished runs that
# retention does not keep (SPEC 3.2): forge_keep_runs finished runs and
# those a change record names stay, and so does every run that is still
# going. Only run folders forge named are removed, never through a symbolic
# link. Does nothing before the configuration is known.
# The finished runs are found first (forge_runs_finished, unless "found"
# says the caller just did) and the records read after (forge_runs_kept,
# unless already read): a run records itself before it ends, so one that
# ended a moment ago is either still alive or already in what is read.
forge_runs_prune() {
	local id root
	[ -n "${forge_keep_runs:-}" ] || return 0
	[ "${1:-}" = found ] || forge_runs_finished
	[ -n "$forge_runs_finished" ] || return 0
	if [ -z "${forge_runs_kept:-}" ]; then
		forge_runs_kept_ids || return 0
	fi
	forge_state_path "$forge_state_dir/runs" dir || return 0
	root=$(cd -P -- "$forge_state_dir/.." && pwd -P) || return 0
	# Removed from inside runs/, once the shell stands in the real folder
	# (its physical path checked): a .forge or runs/ swapped for a link
	# meanwhile no longer redirects the removal, and rm does not follow a
	# link given as its operand.
	(
		cd -P -- "$forge_state_dir/runs" 2>/dev/null || exit 0
		[ "$(pwd -P)" = "$root/.forge/runs" ] || exit 0
		# Run IDs, separated by spaces (they hold none, nor a pattern).
		for id in $forge_runs_finished; do
			case $forge_runs_kept in *"
$id
"*) continue ;; esac
			forge_is_real_dir "$id" || continue
			rm -rf -- "$id" 2>/dev/null || :
		done
	)
	forge_runs_kept=
}

# forge_breaker_read: sets forge_streak from .forge/breaker (0 when absent).
forge_breaker_read() {
	forge_state_require "$forge_state_dir/breaker" file
	forge_streak=$(forge_state get "$forge_state_dir/breaker" streak 0) ||
		forge_die "$?" "cannot read $forge_state_dir/breaker"
	forge_is_count "$forge_streak" ||
		forge_die 65 "$forge_state_dir/breaker: key streak: not a count: $forge_streak"
}

# forge_breaker_state STREAK THRESHOLD: sets forge_breaker to "open" when
# STREAK has reached THRESHOLD, else "closed".
forge_breaker_state() {
	if [ "$1" -ge "$2" ]; then forge_breaker=open; else forge_breaker=closed; fi
}

# forge_breaker_update VERDICT THRESHOLD: applies a verdict to the streak and
# sets forge_streak and forge_breaker. FAIL counts up atomically (so N
# concurrent failures give exactly N), PASS resets, ERROR leaves it alone.
forge_breaker_update() {
	local file verdict threshold
	file=$forge_state_dir/breaker
	verdict=$1 threshold=$2
	set --
	case $verdict in
	FAIL)
		forge_state_require "$file" file
		forge_streak=$(forge_state incr "$file" streak) ||
			forge_die "$?" "cannot update $file"
		forge_is_count "$forge_streak" ||
			forge_die 65 "$file: key streak: not a count: $forge_streak"
		;;
	PASS)
		forge_streak=0
		set -- streak=0 ;;
	*)
		forge_breaker_read ;;
	esac
	forge_state_file set "$file" "$@" threshold="$threshold" \
		last_verdict="$verdict" last_run="$forge_run_id" updated="$forge_ts" ||
		forge_die "$?" "cannot update $file"
	forge_breaker_state "$forge_streak" "$threshold"
}

# forge_breaker_reset: sets the streak to 0 and logs a breaker-reset event.
forge_breaker_reset() {
	forge_breaker_read
	forge_clock
	forge_state_file set "$forge_state_dir/breaker" streak=0 updated="$forge_ts" ||
		forge_die "$?" "cannot update $forge_state_dir/breaker"
	forge_timeline_append "$(jq -n -c --arg ts "$forge_ts" --argjson was "$forge_streak" \
		'{ts: $ts, event: "breaker-reset", streak: 0, previous_streak: $was, breaker: "closed"}')"
}

# forge_timeline_append LINE: appends one JSON line to the timeline, whole.
# The line goes on standard input: it may be longer than one argument can be.
forge_timeline_append() {
	forge_state_require "$forge_state_dir/timeline.jsonl" file
	# A here-document rather than printf |: no process for printf.
	forge_state append "$forge_state_dir/timeline.jsonl" - <<EOF ||
$1
EOF
		forge_die "$?" "cannot append to $forge_state_dir/timeline.jsonl"
}
