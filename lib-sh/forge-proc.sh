# forge-proc.sh — which process owns what forge made: process identity (PID
# and start time, so a recycled PID does not count) and the check that a
# lock held on a file descriptor is still on its file.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_proc_start PID: sets forge_proc_start to the start time of process
# PID (from /proc; empty where there is none): with the PID, it tells a live
# owner from a recycled PID.
forge_proc_start() {
	local field n stat
	forge_proc_start=
	read -r stat 2>/dev/null <"/proc/$1/stat" || return 0
	# The 20th of the fields after "(comm)" (plain numbers and a letter).
	n=0
	for field in ${stat##*) }; do
		n=$((n + 1))
		[ "$n" -lt 20 ] || { forge_proc_start=$field; return 0; }
	done
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
	local pid start
	if forge_is_real_file "$1" && [ -s "$1" ]; then
		read -r pid start 2>/dev/null <"$1" || return 1
		forge_is_uint "$pid" || return 1
		kill -0 "$pid" 2>/dev/null || return 1
		[ -n "$start" ] || return 0
		forge_proc_start "$pid"
		[ -z "$forge_proc_start" ] || [ "$forge_proc_start" = "$start" ]
		return
	fi
	[ -n "${2:-}" ] || return 0
	kill -0 "$2" 2>/dev/null
}

# forge_lock_held LOCK [FD]: true when file descriptor FD (default 9),
# just locked, is still the file LOCK: --prune removes a slot's lock file
# while it holds it, so a run that opened the file before and locked it
# after would hold a lock on a file no one else sees.
forge_lock_held() {
	[ "/dev/fd/${2:-9}" -ef "$1" ]
}
