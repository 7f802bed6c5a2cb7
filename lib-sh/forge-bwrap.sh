# forge-bwrap.sh — the namespace backend (SPEC 4.5): the same sandbox as an
# msb microVM, made with bubblewrap on hosts that cannot boot microVMs: its
# lifecycle, a long-lived bwrap with forge-sandbox-init as PID 1 serving
# exec requests on a unix socket in the state folder. Its renderer (the plan
# as a bwrap argv) is forge-bwrap-render.sh, its limits forge-cgroup.sh, its
# network forge-net-bwrap.sh and forge-net.sh, its image's root filesystem
# forge-image.sh.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# --- state folder and owner ----------------------------------------------------

# forge_bwrap_state NAME: sets forge_bwrap_dir to the state folder of
# namespace sandbox NAME, ${XDG_STATE_HOME:-$HOME/.local/state}/forge/bwrap/NAME
# (forge-shell looks for the same folder), and forge_bwrap_root to its parent.
forge_bwrap_state() {
	# Inside every namespace sandbox: the init, the private HOME (with the
	# cache in it). The fds the launch gives bwrap: the exec socket (made by
	# forge-sandbox-init start), the seccomp filter, bwrap's JSON status.
	forge_bwrap_init_path=/run/forge/sandbox-init forge_bwrap_home=/opt/forge
	forge_bwrap_sock_fd=3 forge_bwrap_seccomp_fd=4 forge_bwrap_status_fd=5
	forge_xdg_dir state || forge_xdg=/nonexistent/.local/state
	forge_bwrap_root=$forge_xdg/forge/bwrap
	forge_bwrap_dir=$forge_bwrap_root/$1
}

# forge_bwrap_exists NAME: true when NAME is a namespace sandbox (it has a
# state folder, a real directory).
forge_bwrap_exists() {
	forge_bwrap_state "$1"
	forge_is_real_dir "$forge_bwrap_dir"
}

# forge_bwrap_owner ROOT: decides who the sandbox of the worktree at ROOT
# runs as (after forge_bwrap_state). uid 1000 inside is the invoker; a root
# invoker would hand the sandbox root's access, so when root starts the
# sandbox of a worktree another user owns, it runs as that owner (SPEC 4.5):
# forge_bwrap_owner is then "UID:GID" (else empty), and the sandbox's private
# folders (forge_bwrap_data) live in the owner's own state folder, which
# only the owner writes: ~owner/.local/state/forge/bwrap/NAME. Otherwise
# forge_bwrap_data is the state folder itself.
forge_bwrap_owner() {
	local home ids
	forge_bwrap_owner='' forge_bwrap_data=$forge_bwrap_dir
	[ "$(id -u)" = 0 ] || return 0
	ids=$(stat -c '%u:%g' -- "$1") || forge_die 69 "cannot stat $1"
	case $ids in 0:*) return 0 ;; esac
	forge_bwrap_owner=$ids
	home=$(getent passwd "${ids%%:*}" | cut -d: -f6) || home=
	case $home in
	/*) ;;
	*) forge_die 69 "the worktree $1 belongs to uid ${ids%%:*}, which has no home folder: the sandbox would run as that user and keeps its folders there" ;;
	esac
	forge_bwrap_data=$home/.local/state/forge/bwrap/${forge_bwrap_dir##*/}
}

# forge_bwrap_as_owner COMMAND...: runs COMMAND as forge_bwrap_owner (with
# no supplementary groups) when there is one, else as is. What root does in
# another user's folders, it does as that user.
forge_bwrap_as_owner() {
	if [ -n "$forge_bwrap_owner" ]; then
		setpriv --reuid="${forge_bwrap_owner%%:*}" --regid="${forge_bwrap_owner#*:}" --clear-groups -- "$@"
	else
		"$@"
	fi
}

# --- lifecycle ----------------------------------------------------------------------

# forge_bwrap_running NAME: true when NAME's PID-namespace init runs; sets
# forge_bwrap_pid to it (the pid and start time recorded at up must match).
forge_bwrap_running() {
	local start pid
	forge_bwrap_state "$1"
	forge_bwrap_pid=
	[ -f "$forge_bwrap_dir/pid" ] || return 1
	read -r pid start <"$forge_bwrap_dir/pid" 2>/dev/null || return 1
	forge_is_uint "$pid" || return 1
	forge_proc_start "$pid"
	[ -n "$forge_proc_start" ] && [ "$forge_proc_start" = "$start" ] || return 1
	forge_bwrap_pid=$pid
}

# forge_bwrap_private_dirs: creates the state folder (owner-only) and the
# sandbox's private folders in forge_bwrap_data (as their owner): home, tmp,
# cache, an empty folder, passwd and group (after forge_bwrap_render).
forge_bwrap_private_dirs() {
	local d data
	data=$forge_bwrap_data
	(umask 077 && mkdir -p -- "$forge_bwrap_root") || forge_die 73 "cannot create $forge_bwrap_root"
	if [ -L "$forge_bwrap_dir" ] || { [ -e "$forge_bwrap_dir" ] && [ ! -d "$forge_bwrap_dir" ]; }; then
		forge_die 73 "$forge_bwrap_dir is not a directory; refusing to use it"
	fi
	(umask 077 && mkdir -p -- "$forge_bwrap_dir") || forge_die 73 "cannot create $forge_bwrap_dir"
	chmod 0700 -- "$forge_bwrap_dir" || forge_die 73 "cannot make $forge_bwrap_dir owner-only"
	{ printf '%s\n' "$forge_bwrap_owner" >"$forge_bwrap_dir/owner" &&
		printf '%s\n' "$forge_bwrap_data" >"$forge_bwrap_dir/data"; } || forge_die 73 "cannot write $forge_bwrap_dir"
	# As their owner (forge_bwrap_as_owner): what root makes in the owner's
	# folders follows no link of the owner's making with root's rights.
	for d in home tmp cache empty etc; do
		[ ! -L "$data/$d" ] || forge_die 73 "cannot create the private folders of the sandbox in $data: $data/$d is a symlink"
	done
	{ (umask 077 && forge_bwrap_as_owner mkdir -p -- "$data" "$data/home" "$data/tmp" "$data/cache" "$data/empty" "$data/etc") &&
		forge_bwrap_as_owner chmod 0755 -- "$data/empty" && forge_bwrap_as_owner chmod 1777 -- "$data/tmp" &&
		printf 'root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:%s:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' "$forge_bwrap_home" |
		forge_bwrap_owner_writes "$data/etc/passwd" &&
		printf 'root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n' | forge_bwrap_owner_writes "$data/etc/group" &&
		forge_bwrap_owner_writes "$data/etc/empty" </dev/null; } ||
		forge_die 73 "cannot create the private folders of the sandbox in $data"
}

# forge_bwrap_owner_writes FILE: writes standard input to FILE as
# forge_bwrap_owner (forge_bwrap_as_owner), owner-only when it is new.
forge_bwrap_owner_writes() {
	(umask 077 && forge_bwrap_as_owner tee -- "$1" >/dev/null)
}

# forge_bwrap_lock NAME: holds an exclusive lock on NAME's lifecycle (fd 8)
# until the program exits, so two up, or up and rm, never interleave; 75
# after 60 s. (forge-sandbox-init start closes fd 8: no sandbox holds it.)
# The lock file goes with the sandbox (forge_bwrap_remove deletes it while
# it holds it), so the lock taken is the one on the file that is there: a
# waiter that got the lock of a file removed meanwhile takes the new one.
forge_bwrap_lock() {
	local file tries
	forge_bwrap_state "$1"
	file=$forge_bwrap_root/$1.lock
	(umask 077 && mkdir -p -- "$forge_bwrap_root") || forge_die 73 "cannot create $forge_bwrap_root"
	tries=0
	while :; do
		[ ! -L "$file" ] || forge_die 73 "$file is a symlink; refusing to use it"
		exec 8>>"$file" || forge_die 73 "cannot create $file"
		flock -w 60 8 || forge_die 75 "another forge-sandbox is starting or removing $1 (it holds $file)"
		[ "$(stat -L -c %d:%i -- /dev/fd/8 2>/dev/null)" != "$(stat -c %d:%i -- "$file" 2>/dev/null)" ] ||
			return 0
		tries=$((tries + 1))
		[ "$tries" -lt 100 ] || forge_die 75 "cannot hold the lock $file: it keeps being removed"
	done
}

# forge_bwrap_up ROOT NAME [recreate|restart]: adopts the running namespace
# sandbox NAME, or starts it (after forge_sandbox_plan and forge_bwrap_render).
# recreate and restart stop it first (recreate also drops home and /tmp;
# the cache is kept by both).
forge_bwrap_up() {
	forge_require_tool flock setpriv
	forge_bwrap_lock "$2"
	if forge_bwrap_running "$2"; then
		case ${3:-} in
		'')
			forge_say "adopting $2 (running)"
			forge_sandbox_register "$2" "$1" bwrap
			forge_sandbox_drift_check "$1" "$2" bwrap
			forge_live_drift "$2"
			return 0
			;;
		*) forge_bwrap_stop "$2" ;;
		esac
	fi
	if [ "${3:-}" = recreate ] && [ -d "$forge_bwrap_data" ]; then
		forge_bwrap_as_owner rm -rf -- "$forge_bwrap_data/home" "$forge_bwrap_data/tmp" ||
			forge_die 73 "cannot clear $forge_bwrap_data for the new sandbox"
	fi
	[ -n "$forge_bwrap_rootfs" ] || [ "$forge_bwrap_rootfs_kind" = host ] ||
		forge_die 69 "no root filesystem for $2"
	forge_bwrap_private_dirs
	if [ "$forge_bwrap_rootfs_kind" = host ]; then
		printf 'host\n' >"$forge_bwrap_dir/image"
	else
		printf '%s\n' "$forge_sandbox_image" >"$forge_bwrap_dir/image"
	fi || forge_die 73 "cannot write $forge_bwrap_dir/image"
	forge_bwrap_limits_set "$2" "$forge_sandbox_memory_mib" "$forge_sandbox_cpus"
	forge_sandbox_register "$2" "$1" bwrap
	forge_sandbox_record_create "$1" "$2"
	forge_bwrap_start "$1" "$2"
	forge_say "started $2 (namespace sandbox, pid $forge_bwrap_pid)"
}

# forge_bwrap_start ROOT NAME: launches bwrap detached with the exec socket,
# the seccomp filter and the cgroups, waits for its init and checks that an
# exec works (internal to forge_bwrap_up).
forge_bwrap_start() {
	local ca name pid rest root shell tries
	root=$1 name=$2
	forge_helper_path forge-seccomp
	"$forge_helper" >"$forge_bwrap_dir/seccomp.bpf" || forge_die 70 "forge-seccomp failed"
	printf '%s' "$forge_bwrap_env_names" >"$forge_bwrap_dir/env" || forge_die 73 "cannot write $forge_bwrap_dir/env"
	# The host paths it sees, for exec's check of the current directory.
	{ printf '%s' "$forge_plan_mounts" && { [ -z "${forge_plan_project:-}" ] || printf 'ro %s\n' "$forge_plan_project"; }; } \
		>"$forge_bwrap_dir/mounts" || forge_die 73 "cannot write $forge_bwrap_dir/mounts"
	# Egress first: the proxy's socket must exist for bwrap to mount it.
	if [ "$forge_bwrap_rootfs_kind" = host ]; then
		ca=/etc/ssl/certs/ca-certificates.crt
	else
		ca=$forge_bwrap_rootfs/etc/ssl/certs/ca-certificates.crt
	fi
	forge_net_bwrap_prepare "$forge_bwrap_dir" "$forge_bwrap_netmode" "$forge_sandbox_egress_mode" "$forge_sandbox_egress_hosts" "$forge_sandbox_secrets" "$ca" "$forge_bwrap_data"
	rm -f -- "$forge_bwrap_dir/exec.sock" "$forge_bwrap_dir/status.json" "$forge_bwrap_dir/pid" "$forge_bwrap_dir/bwrap.args"
	: >"$forge_bwrap_dir/log"

	set -- "$forge_bwrap_init" start
	rest=$forge_bwrap_join
	while [ -n "$rest" ]; do
		set -- "$@" --cgroup "${rest%%'
'*}"
		rest=${rest#*'
'}
	done
	set -- "$@" --cpus "$forge_sandbox_cpus" --keep "$forge_bwrap_seccomp_fd" --keep "$forge_bwrap_status_fd" --keep 7
	[ -z "$forge_bwrap_owner" ] || set -- "$@" --user "$forge_bwrap_owner"
	# bwrap's options from fd 7, NUL-separated (no path needs to be a line),
	# with what the plan's --args 6 names in its place: the proxy variables
	# with a token (forge-net-bwrap.sh), so that the token is on no command
	# line; the command after them. Its --hostname on the command line too
	# (the same): ps shows which sandbox a bwrap is.
	(umask 077 && forge_bwrap_argv_print launch 6<"$forge_bwrap_dir/proxy.args" >"$forge_bwrap_dir/bwrap.args") ||
		forge_die 73 "cannot write $forge_bwrap_dir/bwrap.args"
	set -- "$@" "$forge_bwrap_dir/exec.sock" "$forge_bwrap_sock_fd" -- \
		bwrap --hostname "$name" --args 7 "$forge_bwrap_init_path" serve "$forge_bwrap_sock_fd"
	# Detached: its own session (forge-sandbox-init start), stdio to the log.
	(cd / && exec "$@" 4<"$forge_bwrap_dir/seccomp.bpf" 5>"$forge_bwrap_dir/status.json" 7<"$forge_bwrap_dir/bwrap.args" \
		</dev/null >>"$forge_bwrap_dir/log" 2>&1) &

	tries=0
	pid=
	while [ "$tries" -lt 200 ]; do
		pid=$(sed -n 's/.*"child-pid": *\([0-9][0-9]*\).*/\1/p' "$forge_bwrap_dir/status.json" 2>/dev/null | head -n 1)
		[ -z "$pid" ] || break
		kill -0 "$!" 2>/dev/null || break
		sleep 0.05
		tries=$((tries + 1))
	done
	# Read by now (or never to be): it holds the proxy's token.
	rm -f -- "$forge_bwrap_dir/bwrap.args"
	if [ -z "$pid" ]; then
		forge_error "bwrap did not start $name:"
		tail -n 20 "$forge_bwrap_dir/log" | forge_printable_lines '    ' >&2
		kill -KILL "$!" 2>/dev/null || :
		exit 69
	fi
	forge_proc_start "$pid"
	printf '%s %s\n' "$pid" "$forge_proc_start" >"$forge_bwrap_dir/pid" ||
		forge_die 73 "cannot write $forge_bwrap_dir/pid"
	forge_bwrap_pid=$pid
	forge_helper_path forge-shell
	shell=$forge_helper
	forge_helper_path forge-timeout
	# The probe runs where the sandbox surely has the folder (the worktree)
	# and runs forge's own init binary (--version): never a program of the
	# image, which may have no shell and no true (distroless).
	if ! (cd "$root" && FORGE_SANDBOX_CONTAINER=$name exec "$forge_helper" -k 2 30 \
		"$shell" --exec "$forge_bwrap_init_path" --version </dev/null >/dev/null); then
		forge_error "$name started but does not run commands:"
		tail -n 20 "$forge_bwrap_dir/log" | forge_printable_lines '    ' >&2
		forge_bwrap_stop "$name"
		exit 69
	fi
	forge_bwrap_net_hook "$name"
}

# forge_bwrap_net_hook NAME: egress for NAME once it runs (forge_bwrap_pid
# is its init): forge-net.sh's relay inside for an allow-list, slirp4netns
# and nft for open egress. A sandbox whose egress cannot be set up is
# stopped: never left running with other rules than configured.
forge_bwrap_net_hook() {
	local rc
	rc=0
	forge_net_bwrap_start "$1" "$forge_bwrap_pid" "$forge_bwrap_dir" "$forge_bwrap_netmode" || rc=$?
	[ "$rc" -ne 0 ] || return 0
	forge_error "$1 started but its egress ($forge_bwrap_netmode) could not be set up:"
	tail -n 5 "$forge_bwrap_dir/log" "$forge_bwrap_dir/slirp.log" 2>/dev/null | forge_printable_lines '    ' >&2
	forge_bwrap_stop "$1"
	exit 69
}

# forge_bwrap_stop NAME: kills everything of NAME (SIGKILL to its
# PID-namespace init ends every process in it) and waits until it is gone.
forge_bwrap_stop() {
	local tries
	forge_bwrap_running "$1" || {
		forge_net_bwrap_stop "$forge_bwrap_dir"
		forge_bwrap_limits_remove "$1" || :
		return 0
	}
	kill -KILL "$forge_bwrap_pid" 2>/dev/null || :
	tries=0
	while [ -d "/proc/$forge_bwrap_pid" ] && [ "$tries" -lt 200 ]; do
		forge_proc_start "$forge_bwrap_pid"
		[ -n "$forge_proc_start" ] || break
		sleep 0.05
		tries=$((tries + 1))
	done
	# The cgroup empties once the namespace's processes are reaped.
	tries=0
	until forge_bwrap_limits_remove "$1"; do
		if [ "$tries" -ge 40 ]; then
			forge_warn "cannot remove the cgroups of $1"
			break
		fi
		sleep 0.05
		tries=$((tries + 1))
	done
	forge_net_bwrap_stop "$forge_bwrap_dir"
	rm -f -- "$forge_bwrap_dir/pid" "$forge_bwrap_dir/exec.sock"
}

# forge_bwrap_remove NAME: stops NAME and removes its state folder (home,
# /tmp, cache and all).
forge_bwrap_remove() {
	forge_require_tool flock setpriv
	forge_bwrap_lock "$1"
	forge_bwrap_stop "$1"
	forge_bwrap_state "$1"
	# The private folders, as the user they were made for.
	forge_bwrap_owner='' forge_bwrap_data=
	[ ! -f "$forge_bwrap_dir/owner" ] || read -r forge_bwrap_owner <"$forge_bwrap_dir/owner" || :
	[ ! -f "$forge_bwrap_dir/data" ] || read -r forge_bwrap_data <"$forge_bwrap_dir/data" || :
	if [ -n "$forge_bwrap_owner" ] && [ -n "$forge_bwrap_data" ] && [ "$forge_bwrap_data" != "$forge_bwrap_dir" ]; then
		forge_bwrap_as_owner rm -rf -- "$forge_bwrap_data" || forge_warn "cannot remove $forge_bwrap_data"
	fi
	forge_rm_tree "$forge_bwrap_dir"
	forge_sandbox_unregister "$1"
	# Its lock too, while held (forge_bwrap_lock): a waiter takes a new one.
	rm -f -- "$forge_bwrap_root/$1.lock"
}

# forge_bwrap_names: sets forge_bwrap_names to the namespace sandboxes
# (those with a state folder), one per line.
forge_bwrap_names() {
	local entry
	forge_bwrap_state x
	forge_bwrap_names=
	for entry in "$forge_bwrap_root"/forge-*; do
		forge_is_real_dir "$entry" || continue
		forge_bwrap_names=$forge_bwrap_names${entry##*/}'
'
	done
}

# --- ls ------------------------------------------------------------------------

# forge_bwrap_list: sets forge_bwrap_names (forge_bwrap_names) and
# forge_bwrap_ls_json, a JSON array of {name, backend, status, image,
# created_at} with status running or stopped.
forge_bwrap_list() {
	local name rest status image
	forge_bwrap_names
	set --
	rest=$forge_bwrap_names
	while [ -n "$rest" ]; do
		name=${rest%%'
'*}
		rest=${rest#*'
'}
		status=stopped
		! forge_bwrap_running "$name" || status=running
		image=
		[ ! -f "$forge_bwrap_dir/image" ] || read -r image <"$forge_bwrap_dir/image" || :
		set -- "$@" "$name" "$status" "$image"
	done
	forge_bwrap_ls_json=$(jq -cn '$ARGS.positional | [range(0; length; 3) as $i
		| {name: .[$i], backend: "bwrap", status: .[$i + 1],
		   image: (.[$i + 2] | if . == "" then null else . end), created_at: null}]' --args -- "$@") ||
		forge_die 70 "jq failed while listing the namespace sandboxes"
}

