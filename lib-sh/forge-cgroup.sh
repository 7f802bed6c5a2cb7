# forge-cgroup.sh — the namespace sandbox's resource limits (SPEC 4.5
# "Resources"): memory, cpu and pids through cgroups v2 or v1, where the
# host lets this process make them; the plan's cpus and memory (MiB).
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh

# forge_bwrap_cgroups NAME: sets forge_bwrap_cgroup_kind (v2, v1 or empty)
# and forge_bwrap_cgroup_dirs, NAME's cgroup folders one per line (which
# may not exist yet).
forge_bwrap_cgroups() {
	forge_bwrap_cgroup_kind='' forge_bwrap_cgroup_dirs=
	forge_bcg_base=/sys/fs/cgroup
	if [ -f "$forge_bcg_base/cgroup.controllers" ]; then
		forge_bwrap_cgroup_kind=v2
		forge_bwrap_cgroup_dirs=$forge_bcg_base/forge/$1'
'
	elif [ -d "$forge_bcg_base/memory" ]; then
		forge_bwrap_cgroup_kind=v1
		for forge_bcg_c in memory pids cpu; do
			[ -d "$forge_bcg_base/$forge_bcg_c" ] &&
				forge_bwrap_cgroup_dirs=$forge_bwrap_cgroup_dirs$forge_bcg_base/$forge_bcg_c/forge/$1'
'
		done
	fi
	return 0
}

# forge_bwrap_limits_possible: true when this process can make cgroups
# (after forge_bwrap_cgroups); what doctor and up report.
forge_bwrap_limits_possible() {
	[ -n "$forge_bwrap_cgroup_kind" ] || return 1
	forge_blp_dir=${forge_bwrap_cgroup_dirs%%'
'*}
	forge_blp_dir=${forge_blp_dir%/forge/*}
	[ -w "$forge_blp_dir" ]
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
	forge_bwrap_join=
	forge_bwrap_cgroups "$1"
	if ! forge_bwrap_limits_possible; then
		forge_warn "no writable cgroup here (${forge_bwrap_cgroup_kind:-no cgroup filesystem}): $1 runs without its memory and cpu limits (CPU affinity only)"
		return 0
	fi
	forge_bls_bytes=$(($2 * 1048576))
	forge_bls_rest=$forge_bwrap_cgroup_dirs
	while [ -n "$forge_bls_rest" ]; do
		forge_bls_dir=${forge_bls_rest%%'
'*}
		forge_bls_rest=${forge_bls_rest#*'
'}
		if ! mkdir -p -- "$forge_bls_dir" 2>/dev/null; then
			forge_warn "cannot create the cgroup $forge_bls_dir: $1 runs without that limit"
			continue
		fi
		forge_bls_ok=1
		case $forge_bwrap_cgroup_kind/${forge_bls_dir%/forge/*} in
		v2/*)
			forge_bwrap_write "${forge_bls_dir%/*}/cgroup.subtree_control" '+memory +pids +cpu' || :
			forge_bwrap_write "$forge_bls_dir/memory.max" "$forge_bls_bytes" || forge_bls_ok=
			forge_bwrap_write "$forge_bls_dir/memory.swap.max" 0 || :
			forge_bwrap_write "$forge_bls_dir/pids.max" 8192 || :
			forge_bwrap_write "$forge_bls_dir/cpu.max" "$(($3 * 100000)) 100000" || :
			;;
		v1/*/memory)
			forge_bwrap_write "$forge_bls_dir/memory.limit_in_bytes" "$forge_bls_bytes" || forge_bls_ok=
			[ ! -f "$forge_bls_dir/memory.memsw.limit_in_bytes" ] ||
				forge_bwrap_write "$forge_bls_dir/memory.memsw.limit_in_bytes" "$forge_bls_bytes" || :
			;;
		v1/*/pids) forge_bwrap_write "$forge_bls_dir/pids.max" 8192 || forge_bls_ok= ;;
		v1/*/cpu)
			forge_bwrap_write "$forge_bls_dir/cpu.cfs_period_us" 100000 &&
				forge_bwrap_write "$forge_bls_dir/cpu.cfs_quota_us" "$(($3 * 100000))" || forge_bls_ok=
			;;
		esac
		if [ -n "$forge_bls_ok" ]; then
			forge_bwrap_join=$forge_bwrap_join$forge_bls_dir/cgroup.procs'
'
		else
			forge_warn "cannot set the limit in $forge_bls_dir: $1 runs without it"
		fi
	done
}

# forge_bwrap_limits_remove NAME: removes NAME's (empty) cgroups.
forge_bwrap_limits_remove() {
	forge_bwrap_cgroups "$1"
	forge_blr_rest=$forge_bwrap_cgroup_dirs
	while [ -n "$forge_blr_rest" ]; do
		forge_blr_dir=${forge_blr_rest%%'
'*}
		forge_blr_rest=${forge_blr_rest#*'
'}
		[ ! -d "$forge_blr_dir" ] || rmdir -- "$forge_blr_dir" 2>/dev/null || return 1
	done
	return 0
}
