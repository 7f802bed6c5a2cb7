#!/usr/bin/env bats
# lib-sh/forge.sh: sourcing defines forge_* functions and nothing else, under
# set -eu, in dash, bash and busybox sh (SPEC section 8).
load test_helper

setup() { repo_setup; }
teardown() { forge_test_teardown; }

@test "bash: sourcing adds only forge_* functions and the variables forge-vars.sh declares: no options, traps, output or cd" {
	run bash -c '
		set -eu
		before_vars=$(compgen -v | sort)
		before_funcs=$(compgen -A function | sort)
		before_opts=$(set +o; shopt -p)
		before_pwd=$PWD
		before_traps=$(trap -p)
		out=$(. "$FORGE_LIBDIR/forge.sh"; echo done)
		[ "$out" = done ]
		. "$FORGE_LIBDIR/forge.sh"
		new_vars=$(comm -13 <(echo "$before_vars") <(compgen -v | sort) | grep -vx -e before_funcs -e before_opts -e before_pwd -e out -e before_vars -e before_traps -e _ -e BASH_LINENO -e BASH_SOURCE -e FUNCNAME || true)
		declared=$(sed -n "s/^: \"\\\${\(forge_[a-z0-9_]*\)[:]*=.*/\1/p" "$FORGE_LIBDIR/forge-vars.sh" | sort)
		[ "$(printf "%s\n" "$declared" | wc -l)" -gt 100 ]
		undeclared=$(comm -23 <(printf "%s\n" "$new_vars" | grep -vx declared || true) <(echo "$declared"))
		[ -z "$undeclared" ] || { echo "new variables: $undeclared"; exit 1; }
		new_funcs=$(comm -13 <(echo "$before_funcs") <(compgen -A function | sort))
		[ -n "$new_funcs" ]
		if printf "%s\n" "$new_funcs" | grep -v "^forge_"; then echo "non-forge function"; exit 1; fi
		[ "$(set +o; shopt -p)" = "$before_opts" ]
		[ "$(trap -p)" = "$before_traps" ]
		[ "$PWD" = "$before_pwd" ]
		echo ok'
	assert_success
	assert_output ok
}

@test "dash and busybox sh: sourcing under set -eu is silent and changes no option or trap" {
	for shell in dash "busybox sh"; do
		run $shell -c '
			set -eu
			before=$(set +o)
			. "$FORGE_LIBDIR/forge.sh"
			[ "$(set +o)" = "$before" ]
			[ -z "$(trap)" ]
			forge_is_uint 42 && ! forge_is_uint 4x
			echo ok'
		assert_success
		assert_output ok
	done
}

@test "library functions: repository root, config key, change id, run and record a verdict" {
	mkdir -p sub/dir
	run sh -c '
		set -eu
		. "$FORGE_LIBDIR/forge.sh"
		cd sub/dir
		forge_repo_root
		printf "%s\n" "$forge_root"
		forge_config_load "$forge_root"
		forge_config_get verify.breaker.threshold
		forge_valid_change_id ok-1 && ! forge_valid_change_id "no/slash" && echo ids
		forge_state_init "$forge_root"
		forge_run_begin
		forge_threshold=3
		forge_head "$forge_root"
		forge_record FAIL false "" "$forge_head" "" null null "" 0 build make 2 10 exit
		printf "%s\n" "$forge_streak $forge_breaker"'
	assert_success
	assert_line --index 0 "$REPO"
	assert_line --index 1 3
	assert_line --index 2 ids
	assert_line --index 3 '1 closed'
	jq -e '.verdict == "FAIL" and .steps[0].name == "build" and .steps[0].exit == 2' .forge/timeline.jsonl
}

@test "forge-verify works under dash, bash and busybox sh" {
	for shell in dash bash "busybox sh"; do
		run $shell "$abs_top_builddir/bin/forge-verify" -- true
		assert_success
		assert_output --partial 'Verdict: PASS'
		run $shell "$abs_top_builddir/bin/forge-verify" -- false
		assert_failure 1
	done
	[ "$(forge-state get .forge/breaker streak)" = 1 ]
}

@test "the programs under test: the build tree's, run by FORGE_TEST_SHELL when it is set" {
	if [ -n "${FORGE_TEST_SHELL:-}" ]; then
		run cat "$(command -v forge-verify)"
		assert_output --partial "exec $FORGE_TEST_SHELL $abs_top_builddir/bin/forge-verify"
	else
		[ "$(command -v forge-verify)" = "$abs_top_builddir/bin/forge-verify" ]
	fi
}

@test "forge_copy_create refuses to make a second copy before the first is destroyed" {
	run sh -c '
		set -eu
		forge_prog=lib
		. "$FORGE_LIBDIR/forge.sh"
		forge_repo_root
		forge_copy_create "$forge_root"
		first=$forge_copy_tmp
		trap forge_copy_destroy EXIT
		( forge_copy_create "$forge_root" ) || echo "status $?"
		[ -d "$first" ] && echo "first kept"'
	assert_success
	assert_line 'status 70'
	assert_line 'first kept'
	assert_output --partial 'a copy exists already'
	[ -z "$(find "$TMPDIR" -maxdepth 1 -name 'forge-verify.*')" ]
}

@test "the warm pool's folder follows the one XDG rule: a relative XDG_CACHE_HOME is ignored, a relative HOME gives the passwd home" {
	home=$(getent passwd "$(id -u)" | cut -d: -f6)
	run sh -c 'set -eu; forge_prog=t; . "$FORGE_LIBDIR/forge.sh"
		XDG_CACHE_HOME=rel/cache forge_pool_base; printf "%s\n" "$forge_pool_base"
		XDG_CACHE_HOME=rel/cache HOME=rel forge_pool_base; printf "%s\n" "$forge_pool_base"
		XDG_CACHE_HOME=$1/xdg HOME=rel forge_pool_base; printf "%s\n" "$forge_pool_base"' sh "$SCRATCH"
	assert_success
	assert_line --index 0 "$HOME/.cache/forge/pool"
	assert_line --index 1 "${home%/}/.cache/forge/pool"
	assert_line --index 2 "$SCRATCH/xdg/forge/pool"
}

# lock_sh SCRIPT: runs SCRIPT in sh with the library sourced, the bring-up
# lock's folder as $dir (sandbox forge-x).
lock_sh() {
	run sh -c 'set -eu; forge_prog=t; . "$FORGE_LIBDIR/forge.sh"
		dir=$HOME/.local/state/forge/sandboxes/forge-x.up
		mkdir -p "${dir%/*}"
		'"$1"
}

@test "bring-up lock: a lock released between the failed mkdir and the look is waited for, not refused as 'not a folder'" {
	# mkdir fails once as if another process held the lock, which is gone
	# when forge looks (the race concurrent forge-verify --sandbox runs hit).
	lock_sh 'mkdir() { if [ "$*" = "-m 700 -- $dir" ] && [ ! -e "$HOME/once" ]; then : >"$HOME/once"; return 1; fi; command mkdir "$@"; }
		forge_sandbox_lock forge-x
		[ -e "$HOME/once" ]
		[ "$(cat "$dir/owner")" = "$(forge_owner)" ]
		forge_sandbox_unlock forge-x
		[ ! -e "$dir" ]
		echo ok'
	assert_success
	assert_output ok
}

@test "bring-up lock: a mkdir that keeps failing with nothing there is 73 at once, never a spin" {
	# The registry folder removed under it, or no permission: mkdir fails
	# although no lock is there. (timeout: a spin would be exit 124.)
	run timeout 10 sh -c 'set -eu; forge_prog=t; . "$FORGE_LIBDIR/forge.sh"
		dir=$HOME/.local/state/forge/sandboxes/forge-x.up
		mkdir -p "${dir%/*}"
		mkdir() { if [ "$*" = "-m 700 -- $dir" ]; then return 1; fi; command mkdir "$@"; }
		forge_sandbox_lock forge-x'
	assert_failure 73
	assert_output --partial "cannot create the lock $HOME/.local/state/forge/sandboxes/forge-x.up"
}

@test "bring-up lock: a lock whose owner is gone is broken and taken" {
	lock_sh 'mkdir "$dir"; sh -c "echo \$\$ 1" >"$dir/owner"
		forge_sandbox_lock forge-x
		[ "$(cat "$dir/owner")" = "$(forge_owner)" ]
		ls "${dir%/*}" | grep -c stale || :'
	assert_success
	assert_output 0
}

@test "bring-up lock: a lock without an owner is waited for (75 after FORGE_SANDBOX_WAIT), and broken once 10 s old" {
	lock_sh 'mkdir "$dir"; FORGE_SANDBOX_WAIT=1 forge_sandbox_lock forge-x'
	assert_failure 75
	assert_output --partial "forge-x is being brought up by another process"
	lock_sh 'rmdir "$dir"; mkdir "$dir"; touch -d "-1 minute" "$dir"; forge_sandbox_lock forge-x; cat "$dir/owner"'
	assert_success
	assert_output --regexp '^[0-9]+ [0-9]+$'
}

@test "bring-up lock: breaking checks again under its own lock, so a lock retaken by a live process is kept" {
	# Two waiters found the same dead owner; the first broke and took the
	# lock: the second's break must leave the new, live one alone.
	lock_sh 'mkdir "$dir"; forge_owner >"$dir/owner"
		forge_sandbox_lock_break "$dir"
		[ "$(cat "$dir/owner")" = "$(forge_owner)" ]
		echo kept'
	assert_success
	assert_output kept
}

@test "bring-up lock: a FIFO or a symlink where the break lock goes is refused with 73, never opened" {
	lock_sh 'mkdir "$dir"; sh -c "echo \$\$ 1" >"$dir/owner"; mkfifo "$dir.break"
		forge_sandbox_lock_break "$dir"'
	assert_failure 73
	assert_output --partial "forge-x.up.break is not a regular file; refusing to use it"
	[ -d "$HOME/.local/state/forge/sandboxes/forge-x.up" ]
	lock_sh 'rm "$dir.break"; ln -s /dev/null "$dir.break"; forge_sandbox_lock_break "$dir"'
	assert_failure 73
	assert_output --partial "forge-x.up.break is not a regular file; refusing to use it"
}

@test "bring-up lock: a lock path that is a file or a symlink is refused with 73, never removed" {
	lock_sh ': >"$dir"; forge_sandbox_lock forge-x'
	assert_failure 73
	assert_output --partial "is not a folder; refusing to use it as a lock"
	lock_sh 'rm "$dir"; mkdir "$HOME/elsewhere"; ln -s "$HOME/elsewhere" "$dir"; forge_sandbox_lock forge-x'
	assert_failure 73
	assert_output --partial "is not a folder; refusing to use it as a lock"
	[ -d "$HOME/elsewhere" ]
	[ -L "$HOME/.local/state/forge/sandboxes/forge-x.up" ]
}

# The parts that only a sandbox needs (forge.sh's forge_sandbox_parts_load).
sandbox_parts='forge-mounts forge-mounts-git forge-mounts-trust forge-plan forge-msb forge-msb-lifecycle forge-cgroup
	forge-bwrap-argv forge-bwrap-render forge-bwrap forge-sandbox forge-sandbox-record forge-sandbox-lock forge-doctor
	forge-check forge-verify-sandbox forge-image forge-net forge-net-bwrap forge-egress-live'

@test "forge_parts=verify: the sandbox's parts are read on the first call of a function of theirs, in every shell" {
	local shell
	for shell in dash bash "busybox sh"; do
		run $shell -c '
			set -eu
			forge_parts=verify
			. "$FORGE_LIBDIR/forge.sh"
			command -v forge_bwrap_exists >/dev/null && echo "read at once"
			forge_contain_end
			command -v forge_bwrap_exists >/dev/null && echo "read by forge_contain_end"
			forge_contain_forget "$PWD/none"
			command -v forge_bwrap_exists >/dev/null && echo "read by forge_contain_forget"
			forge_sandbox_parts_load
			echo done'
		assert_success
		assert_output $'read by forge_contain_forget\ndone'
	done
}

@test "forge_parts=verify: the verification's parts and forge-verify call only the four loading functions of the sandbox's parts" {
	local base f fn part sb
	sb=
	for part in $sandbox_parts; do
		sb="$sb $abs_top_srcdir/lib-sh/$part.sh"
	done
	# What forge.sh.in reads at once, and what forge-sandbox-parts.sh.in reads.
	base=$(sed -n 's|^\. "${FORGE_LIBDIR:-@libshdir@}/\(forge-[a-z-]*\)\.sh"$|\1|p' "$abs_top_srcdir/lib-sh/forge.sh.in")
	[ "$(wc -l <<<"$base")" -ge 15 ]
	for f in $base; do
		[[ " $sandbox_parts " != *" $f "* ]] || fail "$f is a sandbox part but forge.sh reads it at once"
	done
	got=$(sed -n 's|^\. "${FORGE_LIBDIR:-@libshdir@}/\(forge-[a-z-]*\)\.sh"$|\1|p' "$abs_top_srcdir/lib-sh/forge-sandbox-parts.sh.in")
	[ "$(echo $got)" = "$(echo $sandbox_parts)" ]
	# shellcheck disable=SC2086 # a file list
	grep -ho '^forge_[a-z0-9_]*()' $sb | tr -d '()' | sort -u |
		grep -vx -e forge_contain_begin -e forge_contain_exec -e forge_contain_forget -e forge_contain_end >"$SCRATCH/fns"
	[ "$(wc -l <"$SCRATCH/fns")" -ge 100 ]
	# (forge-vars.sh names functions in its comments only.)
	for f in $base; do
		[ "$f" != forge-vars ] || continue
		run grep -owF -f "$SCRATCH/fns" <(grep -v '^[[:space:]]*#' "$abs_top_srcdir/lib-sh/$f.sh")
		[ -z "$output" ] || fail "lib-sh/$f.sh calls a sandbox part's $output"
	done
	run grep -owF -f "$SCRATCH/fns" <(grep -v '^[[:space:]]*#' "$abs_top_srcdir/bin/forge-verify.in")
	[ -z "$output" ] || fail "forge-verify calls a sandbox part's $output"
}

@test "forge_real_dir: a physical path as it is, without a subshell; a link, '.' or '..' in it resolved" {
	mkdir -p "$SCRATCH/real/a b" "$SCRATCH/real/c"
	ln -s "$SCRATCH/real/a b" "$SCRATCH/link"
	phys=$(cd -P "$SCRATCH/real" && pwd -P)
	run sh -c '
		. "$FORGE_LIBDIR/forge.sh"
		for d in "$1/real/a b" "$1/link" "$1/real/c/../a b" "$1/real/./c" "$1/real//c" /; do
			forge_real_dir "$d" && printf "%s\n" "$forge_real"
		done
		forge_real_dir "$1/real/missing" || echo missing
		forge_real_dir "$1/real/c/" && printf "%s\n" "$forge_real"' sh "$SCRATCH"
	assert_success
	assert_output "$phys/a b
$phys/a b
$phys/a b
$phys/c
$phys/c
/
missing
$phys/c"
}

@test "forge_git --exec: git's output from a \$(...) of one process, git found on PATH's absolute folders only" {
	mkdir -p "$SCRATCH/rel"
	printf '#!/bin/sh\necho planted\n' >"$SCRATCH/rel/git"
	chmod +x "$SCRATCH/rel/git"
	run sh -c '
		. "$FORGE_LIBDIR/forge.sh"
		cd "$1"
		PATH=rel:$PATH
		out=$(forge_git --exec -C "$2" rev-parse --show-toplevel)
		printf "%s\n" "$out"' sh "$SCRATCH" "$REPO"
	assert_success
	assert_output "$REPO"
}
