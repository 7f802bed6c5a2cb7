# forge-cgroup.sh — the namespace sandbox's resource limits (SPEC 4.5
# "Resources"): memory, cpu and pids through cgroups v2 or v1, where the
# host lets this process make them; the plan's cpus and memory (MiB).
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_bwrap_cgroups NAME: sets forge_bwrap_cgroup_kind (v2, v1 or empty)
# and forge_bwrap_cgroup_dirs, NAME's cgroup folders one per line (which
# may not exist yet).
forge_bwrap_cgroups() {
	local base c
	forge_bwrap_cgroup_kind='' forge_bwrap_cgroup_dirs=
	base=/sys/fs/cgroup
	if [ -f "$base/cgroup.controllers" ]; then
		forge_bwrap_cgroup_kind=v2
		forge_bwrap_cgroup_dirs=$base/forge/$1'
'
	elif [ -d "$base/memory" ]; then
		forge_bwrap_cgroup_kind=v1
		for c in memory pids cpu; do
			[ -d "$base/$c" ] &&
				forge_bwrap_cgroup_dirs=$forge_bwrap_cgroup_dirs$base/$c/forge/$1'
'
		done
	fi
	return 0
}

# forge_bwrap_limits_possible: true when this process can make cgroups
# (after forge_bwrap_cgroups); what doctor and up report.
forge_bwrap_limits_possible() {
	local dir
	[ -n "$forge_bwrap_cgroup_kind" ] || return 1
	dir=${forge_bwrap_cgroup_dirs%%'
'*}
	dir=${dir%/forge/*}
	[ -w "$dir" ]
}

# forge_bwrap_write FILE VALUE: writes VALUE to the cgroup FILE.
forge_bwrap_write() {
	printf '%s\n' "$2" 2>/dev/null >"$1"
}

# forge_bwrap_limits_set NAME MEMORY CPUS: makes NAME's cgroups with the
# memory limit MEMORY (MiB, the plan's "memory"), a CPU quota of CPUS
# and a pids limit; sets forge_bwrap_join to their cgroup.procs files, one
# per line. Warns and sets nothing when the host does not let it.
forge_bwrap_limits_set() {
	local bytes dir ok rest
	forge_bwrap_join=
	forge_bwrap_cgroups "$1"
	if ! forge_bwrap_limits_possible; then
		forge_warn "no writable cgroup here (${forge_bwrap_cgroup_kind:-no cgroup filesystem}): $1 runs without its memory and cpu limits (CPU affinity only)"
		return 0
	fi
	bytes=$(($2 * 1048576))
	rest=$forge_bwrap_cgroup_dirs
	while [ -n "$rest" ]; do
		dir=${rest%%'
'*}
		rest=${rest#*'
'}
		if ! mkdir -p -- "$dir" 2>/dev/null; then
			forge_warn "cannot create the cgroup $dir: $1 runs without that limit"
			continue
		fi
		ok=1
		case $forge_bwrap_cgroup_kind/${dir%/forge/*} in
		v2/*)
			forge_bwrap_write "${dir%/*}/cgroup.subtree_control" '+memory +pids +cpu' || :
			forge_bwrap_write "$dir/memory.max" "$bytes" || ok=
			forge_bwrap_write "$dir/memory.swap.max" 0 || :
			forge_bwrap_write "$dir/pids.max" 8192 || :
			forge_bwrap_write "$dir/cpu.max" "$(($3 * 100000)) 100000" || :
			;;
		v1/*/memory)
			forge_bwrap_write "$dir/memory.limit_in_bytes" "$bytes" || ok=
			[ ! -f "$dir/memory.memsw.limit_in_bytes" ] ||
				forge_bwrap_write "$dir/memory.memsw.limit_in_bytes" "$bytes" || :
			;;
		v1/*/pids) forge_bwrap_write "$dir/pids.max" 8192 || ok= ;;
		v1/*/cpu)
			forge_bwrap_write "$dir/cpu.cfs_period_us" 100000 &&
				forge_bwrap_write "$dir/cpu.cfs_quota_us" "$(($3 * 100000))" || ok=
			;;
		esac
		if [ -n "$ok" ]; then
			forge_bwrap_join=$forge_bwrap_join$dir/cgroup.procs'
'
		else
			forge_warn "cannot set the limit in $dir: $1 runs without it"
		fi
	done
}

# forge_bwrap_limits_remove NAME: removes NAME's (empty) cgroups.
forge_bwrap_limits_remove() {
	local dir rest
	forge_bwrap_cgroups "$1"
	rest=$forge_bwrap_cgroup_dirs
	while [ -n "$rest" ]; do
		dir=${rest%%'
'*}
		rest=${rest#*'
'}
		[ ! -d "$dir" ] || rmdir -- "$dir" 2>/dev/null || return 1
	done
	return 0
}
