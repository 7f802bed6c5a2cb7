# forge-prune.sh — forge-verify --prune (SPEC 3.5): this repository's warm
# pool, the cold copies of killed runs and the pools of repositories that no
# longer exist, with what each frees.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_prune ROOT [--dry-run]: forge-verify --prune: removes this
# repository's warm pool (slots in use by a run are left alone), the cold
# copies of killed runs and the pools of repositories that no longer exist.
# Prints what it freed, slot by slot, with sizes; with --dry-run, what it
# would free, and removes nothing.
forge_prune() {
	local mode pool
	forge_prune_kib=0 mode=free
	[ "${2:-}" != --dry-run ] || mode=dry
	forge_require_tool flock sha256sum
	forge_git_common_dir "$1" || forge_die 69 "cannot find the git directory of $1"
	forge_real_dir "$1" || forge_die 69 "cannot resolve $1"
	forge_root_real=$forge_real
	forge_real_dir "$forge_common_dir" || forge_die 69 "cannot resolve $forge_common_dir"
	forge_common_real=$forge_real
	forge_copy_prune "${TMPDIR:-/tmp}" "$mode"
	forge_pool_base
	forge_repo_id
	forge_pool_remove "$forge_pool_base/$forge_repo_id" "$mode"
	for pool in "$forge_pool_base"/????????????????/; do
		pool=${pool%/}
		forge_is_real_dir "$pool" || continue
		forge_read_file "$pool/source" 2>/dev/null || continue
		[ ! -d "$forge_file" ] || continue
		forge_pool_remove "$pool" "$mode"
	done
	if [ "$forge_prune_kib" -gt 0 ] && [ "$mode" = dry ]; then
		printf 'would free %s in total\n' "$(forge_human_kib "$forge_prune_kib")"
	elif [ "$forge_prune_kib" -gt 0 ]; then
		printf 'freed %s in total\n' "$(forge_human_kib "$forge_prune_kib")"
	else
		printf 'nothing to prune\n'
	fi
}

# forge_copy_prune BASE [MODE]: removes cold copies whose owner is gone (a
# run that was SIGKILLed) from the folder BASE where cold copies are made
# (TMPDIR), when it is absolute (never from a relative one, nor from one
# inside the repository, forge_root_real or forge_common_real: there a
# forge-verify.XXXXXX folder is the user's, since no cold copy is ever made
# there). With MODE free or dry, as forge_prune_note says.
forge_copy_prune() {
	local base="$1" mode="${2:-}" tmp
	case $base in /*) ;; *) return 0 ;; esac
	{ [ -n "${forge_root_real:-}" ] && [ -n "${forge_common_real:-}" ]; } ||
		forge_die 70 "forge_copy_prune: the repository is not known"
	forge_real_dir "$base" || return 0
	case $forge_real/ in "$forge_root_real"/* | "$forge_common_real"/*) return 0 ;; esac
	for tmp in "$base"/forge-verify.??????/; do
		tmp=${tmp%/}
		forge_is_real_dir "$tmp" || continue
		forge_copy_tmp_alive "$tmp" && continue
		forge_prune_note "$mode" "$tmp" || continue
		forge_contain_forget "$tmp"
		forge_rm_tree "$tmp" || :
	done
	return 0
}

# forge_pool_remove POOL MODE: removes the slots of POOL that no run holds,
# then POOL itself once no slot is left; MODE (free or dry) as forge_prune_note
# says.
forge_pool_remove() {
	local lock path slot
	forge_is_real_dir "$1" || return 0
	for lock in "$1"/*.lock; do
		forge_is_real_file "$lock" || continue
		slot=${lock%.lock}
		# Holding the slot's lock proves no run uses it; the lock file goes
		# last, so a run that starts meanwhile finds the slot gone or whole.
		exec 8>>"$lock" || continue
		if flock -n 8 && forge_lock_held "$lock" 8; then
			for path in "$slot" "$slot.state"; do
				forge_path_exists "$path" || continue
				forge_prune_note "$2" "$path" || continue
				[ "$path" != "$slot" ] || forge_contain_forget "$slot"
				forge_rm_tree "$path" || forge_warn "could not remove $path"
			done
			[ "$2" = dry ] || rm -f -- "$lock"
		else
			forge_warn "warm slot $slot is in use; left alone"
		fi
		exec 8>&-
	done
	set -- "$1" "$2" "$1"/*.lock
	[ -e "$3" ] && return 0
	forge_prune_note "$2" "$1" || return 0
	forge_rm_tree "$1" || forge_warn "could not remove $1"
}

# forge_prune_note MODE PATH: with MODE free (forge_prune), prints "freed PATH
# (SIZE)" for what is about to be removed and adds its size to
# forge_prune_kib. With MODE dry (forge_prune --dry-run), prints "would free
# PATH (SIZE)" instead and returns 1: the caller removes nothing. With MODE
# empty (a run's own clean-up), does nothing.
forge_prune_note() {
	local size
	[ -n "$1" ] || return 0
	size=$(du -sk -- "$2" 2>/dev/null) || size=0
	size=${size%%[!0-9]*}
	forge_prune_kib=$((${forge_prune_kib:-0} + ${size:-0}))
	if [ "$1" = dry ]; then
		printf 'would free %s (%s)\n' "$2" "$(forge_human_kib "${size:-0}")"
		return 1
	fi
	printf 'freed %s (%s)\n' "$2" "$(forge_human_kib "${size:-0}")"
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
