# forge-sandbox-lock.sh — the lock that makes concurrent ups of one sandbox
# take turns (SPEC 4.1), with its stale-lock breaking, and how long up waits
# for a busy sandbox or its lock (FORGE_SANDBOX_WAIT).
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_sandbox_wait_setting: sets forge_sandbox_wait to FORGE_SANDBOX_WAIT
# (default 30), how many seconds up waits for a busy sandbox or its lock.
# Exits 64 when it is not a whole number.
forge_sandbox_wait_setting() {
	forge_sandbox_wait=${FORGE_SANDBOX_WAIT:-30}
	forge_is_uint "$forge_sandbox_wait" ||
		forge_die 64 "FORGE_SANDBOX_WAIT must be a whole number of seconds, not '$forge_sandbox_wait'"
}

# forge_sandbox_lock NAME: takes the lock on bringing up sandbox NAME, the
# folder ${XDG_STATE_HOME:-$HOME/.local/state}/forge/sandboxes/NAME.up made
# with mkdir (atomic) and owned by this process (its "owner" file: PID and
# start time). Not a flock: msb's or the sandbox's processes would inherit
# the descriptor and hold it. A lock whose owner is gone (a killed run), or
# still without an owner 10 seconds after it was made (a run killed while
# taking it), is broken (forge_sandbox_lock_break) and taken anew.
# Waits up to FORGE_SANDBOX_WAIT (30) seconds, then exits 75.
forge_sandbox_lock() {
	local dir gone tries limit
	forge_sandbox_registry "$1"
	dir=$forge_sandbox_registry_dir/$1.up
	forge_sandbox_wait_setting
	limit=$forge_sandbox_wait
	mkdir -p -- "$forge_sandbox_registry_dir" 2>/dev/null ||
		forge_die 73 "cannot create $forge_sandbox_registry_dir"
	tries=0 gone=0
	until mkdir -m 700 -- "$dir" 2>/dev/null; do
		if [ -L "$dir" ] || { [ -e "$dir" ] && [ ! -d "$dir" ]; }; then
			forge_die 73 "$dir is not a folder; refusing to use it as a lock"
		fi
		if [ ! -e "$dir" ]; then
			# Released between the mkdir and the look: try again at once. A
			# mkdir that keeps failing with nothing there is an error of its
			# own (a folder removed, no permission), said with mkdir's words.
			gone=$((gone + 1))
			[ "$gone" -lt 3 ] && continue
			mkdir -m 700 -- "$dir" && break
			[ -e "$dir" ] || forge_die 73 "cannot create the lock $dir"
			continue
		fi
		if forge_sandbox_lock_stale "$dir"; then
			forge_sandbox_lock_break "$dir" ||
				forge_die 75 "cannot break the stale lock $dir"
			continue
		fi
		[ "$tries" -lt "$((limit * 10))" ] ||
			forge_die 75 "$1 is being brought up by another process (lock $dir); try again later"
		[ "$tries" != 0 ] || forge_say "waiting for another process bringing up $1"
		sleep 0.1
		tries=$((tries + 1))
	done
	# Written whole, then renamed: an owner file is never seen half written.
	{ forge_owner >"$dir/owner.$$" && mv -f -- "$dir/owner.$$" "$dir/owner"; } ||
		forge_die 73 "cannot write $dir/owner"
}

# forge_sandbox_lock_stale DIR: true when the lock folder DIR is abandoned:
# its owner file names a process that is gone, or it has none 10 seconds
# after it was made (its maker writes one at once).
forge_sandbox_lock_stale() {
	local made
	if [ -f "$1/owner" ]; then
		! forge_owner_alive "$1/owner"
		return
	fi
	made=$(stat -c %Y -- "$1" 2>/dev/null) || return 1
	[ "$(date +%s)" -gt "$((made + 10))" ]
}

# forge_sandbox_lock_break DIR: removes the abandoned lock folder DIR. Two
# waiters may find it abandoned at once, and the first may take the lock
# anew before the second acts: so the break is made under a flock on
# DIR.break (held only by this subshell, which starts nothing) and the lock
# is checked again under it. The folder is renamed first, so no one sees
# a half-removed lock.
forge_sandbox_lock_break() (
	forge_require_tool flock
	if [ -L "$1.break" ] || { [ -e "$1.break" ] && [ ! -f "$1.break" ]; }; then
		forge_die 73 "$1.break is not a regular file; refusing to use it"
	fi
	exec 7>>"$1.break" || exit 1
	flock -w 10 7 || exit 1
	if [ -d "$1" ] && forge_sandbox_lock_stale "$1"; then
		mv -- "$1" "$1.stale.$$" || exit 1
		rm -rf -- "$1.stale.$$"
	fi
)

# forge_sandbox_unlock NAME: releases the lock forge_sandbox_lock took, if
# this process holds it.
forge_sandbox_unlock() {
	local dir me
	forge_sandbox_registry "$1"
	dir=$forge_sandbox_registry_dir/$1.up
	forge_is_real_dir "$dir" || return 0
	me=$(forge_owner)
	forge_read_file "$dir/owner" 2>/dev/null || return 0
	[ "$forge_file" = "$me" ] || return 0
	rm -rf -- "$dir"
}
