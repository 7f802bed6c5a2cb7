# forge-bwrap.sh — the namespace backend (SPEC 4.5): the same sandbox as an
# msb microVM, made with bubblewrap on hosts that cannot boot microVMs. Its
# renderer turns the plan (forge_plan's JSON, forge-plan.sh) into a bwrap
# argv; its lifecycle runs a long-lived bwrap with forge-sandbox-init as
# PID 1 serving exec requests on a unix socket in the state folder. Its
# limits are forge-cgroup.sh's, its network forge-net.sh's, its image root
# filesystem forge-image.sh's.
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh
# shellcheck disable=SC3043 # local: dash, bash and busybox ash all have it

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

# --- the plan --------------------------------------------------------------------

# forge_bwrap_add ARG...: appends ARGs to forge_bwrap_plan, one per line.
forge_bwrap_add() {
	local arg
	for arg in "$@"; do
		forge_bwrap_plan=$forge_bwrap_plan$arg'
'
	done
}

# forge_bwrap_rootfs_config: sets forge_bwrap_rootfs_kind (image or host)
# from sandbox.bwrap.rootfs. Exits 65 on another value.
forge_bwrap_rootfs_config() {
	forge_bwrap_rootfs_kind=$(forge_config_get sandbox.bwrap.rootfs) ||
		forge_die 70 "jq failed while reading sandbox.bwrap.rootfs"
	case ${forge_bwrap_rootfs_kind:=image} in
	image | host) ;;
	*) forge_die 65 "configuration key sandbox.bwrap.rootfs: '$forge_bwrap_rootfs_kind' is not image or host" ;;
	esac
}

# forge_bwrap_dest_inside ROOTFS DEST: true when every folder of DEST exists
# in ROOTFS as a real directory (not a symlink), so a mount can go there
# although ROOTFS is mounted read-only.
forge_bwrap_dest_inside() {
	local path rest
	path=$1
	rest=${2#/}/
	while [ -n "$rest" ]; do
		path=$path/${rest%%/*}
		rest=${rest#*/}
		forge_is_real_dir "$path" || return 1
	done
}

# forge_bwrap_render_image ROOTFS DESTS: the root filesystem from the
# exported image at ROOTFS: each top-level entry read-only, except /proc,
# /dev, /sys, /tmp, /run, and any folder a mount in DESTS (one path per
# line) needs created that the image does not have (it stays empty).
forge_bwrap_render_image() {
	local d e ok rest top
	for e in "$1"/* "$1"/.[!.]*; do
		[ -e "$e" ] || [ -L "$e" ] || continue
		top=/${e##*/}
		case $top in /proc | /dev | /sys | /tmp | /run) continue ;; esac
		case $top in *'
'*) continue ;; esac
		if [ -L "$e" ]; then
			forge_bwrap_add --symlink "$(readlink -- "$e")" "$top"
			continue
		fi
		ok=1
		rest=$2
		while [ -n "$rest" ]; do
			d=${rest%%'
'*}
			rest=${rest#*'
'}
			if forge_path_within "$d" "$top" && ! forge_bwrap_dest_inside "$1" "$d"; then
				forge_warn "the image's $top is not mounted: $d must be created in it"
				ok=
				break
			fi
		done
		[ -z "$ok" ] || forge_bwrap_add --ro-bind "$e" "$top"
	done
}

# forge_bwrap_render_host STATE: the root filesystem from the host: /usr,
# /bin, /lib* read-only, a curated /etc (no shadow, gshadow, sudoers, ssh
# keys, machine secrets) with the sandbox's own passwd and group from STATE.
forge_bwrap_render_host() {
	local e
	for e in /usr /bin /lib /lib32 /lib64 /libx32; do
		if [ -L "$e" ]; then
			forge_bwrap_add --symlink "$(readlink -- "$e")" "$e"
		elif [ -d "$e" ]; then
			forge_bwrap_add --ro-bind "$e" "$e"
		fi
	done
	# /etc/ssl/private (host TLS keys) stays out: a root invoker's uid 1000 could read it.
	for e in hosts resolv.conf nsswitch.conf host.conf ssl/certs ssl/openssl.cnf ca-certificates ca-certificates.conf \
		alternatives ld.so.cache ld.so.conf ld.so.conf.d localtime timezone mime.types \
		bash.bashrc profile inputrc environment; do
		[ -e "/etc/$e" ] && forge_bwrap_add --ro-bind "/etc/$e" "/etc/$e"
	done
	forge_bwrap_add --ro-bind "$1/etc/passwd" /etc/passwd --ro-bind "$1/etc/group" /etc/group
}

# forge_bwrap_render_proc DATA: /proc, the sandbox's own (its PID
# namespace), without what trusts uid 0. For a root invoker uid 1000 inside
# is host uid 0 (without a capability), and the kernel lets the owner of a
# /proc file write it: core_pattern alone runs a program as host root. So
# the kernel's tunables and triggers (/proc/sys, sysrq-trigger, irq, bus)
# are read-only, bound from the host's /proc (a bind takes a host path; what
# they show is the reader's namespaces'), since bwrap covers irq and bus
# only where it can write them and /proc/sys never. Masked (an empty
# read-only folder or file of DATA): what container runtimes mask (acpi,
# asound, scsi, fs, kcore, keys, timer_list, timer_stats, latency_stats,
# sched_debug, interrupts), kmsg, and every other file at the top of /proc
# that the kernel reserves to root: not readable by all, or writable.
forge_bwrap_render_proc() {
	local e list name seen
	forge_bwrap_add --proc /proc
	for name in sys sysrq-trigger irq bus; do
		[ ! -e "/proc/$name" ] || forge_bwrap_add --ro-bind "/proc/$name" "/proc/$name"
	done
	for name in acpi asound scsi fs; do
		[ ! -d "/proc/$name" ] || [ -L "/proc/$name" ] ||
			forge_bwrap_add --ro-bind "$1/empty" "/proc/$name"
	done
	# Not -type f: a host's /proc may mask a file with a device (the sandbox's is a file).
	list=$(find /proc -mindepth 1 -maxdepth 1 ! -type d ! -type l \( ! -perm -o+r -o -perm -u+w \) -print 2>/dev/null) || :
	for name in kcore keys timer_list timer_stats latency_stats sched_debug interrupts kmsg; do
		[ ! -e "/proc/$name" ] || [ -d "/proc/$name" ] || [ -L "/proc/$name" ] ||
			list=/proc/$name'
'$list
	done
	seen='
'
	while [ -n "$list" ]; do
		e=${list%%'
'*}
		list=${list#"$e"}
		list=${list#'
'}
		# Once each; what is read-only already stays so; a process (a number:
		# one that ended while find looked at it) is the host's, not the sandbox's.
		case $e in
		/proc/sys | /proc/sysrq-trigger | /proc/irq | /proc/bus | /proc/[0-9]* | /proc/*/* | /proc/*[!A-Za-z0-9_.-]*) continue ;;
		/proc/?*) ;;
		*) continue ;;
		esac
		case $seen in *"
$e
"*) continue ;; esac
		seen=$seen$e'
'
		forge_bwrap_add --ro-bind "$1/etc/empty" "$e"
	done
}

# forge_bwrap_render ROOT NAME PLAN [create]: renders the plan PLAN (forge_plan's
# JSON, for the worktree at ROOT and sandbox NAME) as the bwrap argv in
# forge_bwrap_plan, one argument per line, "bwrap" first; sets the plan's
# shell view (forge_plan_view), which the lifecycle uses. Sets forge_bwrap_rootfs (the image's exported folder, for
# rootfs image), forge_bwrap_env_names and forge_bwrap_netmode (none: only
# lo; restricted or open: what forge-net.sh is to start).
forge_bwrap_render() {
	local common dests env line path rest
	forge_plan_view "$3"
	forge_bwrap_state "$2"
	forge_bwrap_owner "$1"
	forge_bwrap_rootfs_config
	if [ -n "$forge_bwrap_owner" ] && [ "$forge_bwrap_rootfs_kind" = image ]; then
		forge_die 69 "root starting the sandbox of another user's worktree ($1, owned by $forge_bwrap_owner): only sandbox.bwrap.rootfs \"host\" is supported, since the image's root filesystem sits in root's cache"
	fi
	forge_helper_path forge-sandbox-init
	forge_bwrap_init=$forge_helper
	forge_git_common_dir "$1" || forge_die 69 "cannot find the git common dir of $1"
	forge_canon_dir "$forge_common_dir" || forge_die 69 "cannot resolve the git dir $forge_common_dir"
	common=$forge_canon

	# Every place a mount goes, so the image's folders are left where one must be made.
	dests=$forge_bwrap_home'
'
	[ -z "$forge_plan_project" ] || dests=$dests$forge_plan_project'
'
	rest=$forge_plan_mounts
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		dests=$dests${line#* }'
'
	done

	forge_bwrap_plan=
	forge_bwrap_add bwrap --unshare-user --uid 1000 --gid 1000 --unshare-pid --unshare-ipc --unshare-uts \
		--unshare-net --unshare-cgroup-try --hostname "$2" --disable-userns --as-pid-1 --new-session \
		--seccomp "$forge_bwrap_seccomp_fd" --json-status-fd "$forge_bwrap_status_fd"
	forge_bwrap_rootfs=
	if [ "$forge_bwrap_rootfs_kind" = host ]; then
		forge_bwrap_render_host "$forge_bwrap_data"
	else
		forge_bwrap_image_rootfs "$forge_sandbox_image" "${4:-}"
		[ -z "$forge_bwrap_rootfs" ] || forge_bwrap_render_image "$forge_bwrap_rootfs" "$dests"
	fi
	forge_bwrap_render_proc "$forge_bwrap_data"
	forge_bwrap_add --dev /dev --tmpfs /run \
		--bind "$forge_bwrap_data/tmp" /tmp \
		--bind "$forge_bwrap_data/home" "$forge_bwrap_home" \
		--bind "$forge_bwrap_data/cache" "$forge_bwrap_home/.cache"

	# The project read-only around its read-write git dir, which msb cannot
	# do (the plan holds it back for a backend that can); then the mount
	# plan, at identical paths, in its order (read-only inside read-write).
	[ -z "$forge_plan_project" ] ||
		forge_bwrap_add --ro-bind "$forge_plan_project" "$forge_plan_project"
	rest=$forge_plan_mounts forge_br_done=
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		path=${line#* }
		if [ "${line%% *}" = ro ]; then
			forge_bwrap_pin_parents "$path" "$forge_br_done"
			forge_bwrap_add --ro-bind "$path" "$path"
		else
			forge_bwrap_add --bind "$path" "$path"
		fi
		forge_br_done=$forge_br_done$line'
'
	done
	# Beyond msb: what makes the host's git run code, read-only (below).
	forge_bwrap_render_git "$1" "$common"
	forge_bwrap_add --ro-bind "$forge_bwrap_init" "$forge_bwrap_init_path"

	# The environment: the image's, then forge's own.
	forge_bwrap_add --clearenv
	if [ -n "$forge_bwrap_rootfs" ] && [ -f "$forge_bwrap_rootfs.env" ]; then
		while IFS= read -r env || [ -n "$env" ]; do
			case $env in
			[A-Za-z_]*=*) forge_bwrap_add --setenv "${env%%=*}" "${env#*=}" ;;
			esac
		done <"$forge_bwrap_rootfs.env"
	else
		forge_bwrap_add --setenv PATH /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			--setenv LANG C.UTF-8
	fi
	forge_bwrap_add --setenv HOME "$forge_bwrap_home" --setenv USER agent --setenv LOGNAME agent \
		--setenv XDG_CACHE_HOME "$forge_bwrap_home/.cache" --setenv TMPDIR /tmp \
		--setenv FORGE_SANDBOX_BACKEND bwrap
	# The network (forge-net.sh): what the sandbox must see of it at start.
	forge_net_mode "$forge_sandbox_egress_mode" "$forge_sandbox_secrets"
	forge_bwrap_netmode=$forge_net_mode
	forge_net_bwrap_render "$forge_bwrap_data" "$forge_bwrap_netmode" "$forge_sandbox_secrets"
	forge_bwrap_add --chdir "$1" "$forge_bwrap_init_path" serve "$forge_bwrap_sock_fd"

	# sandbox.network.env names: their values travel with each exec.
	forge_bwrap_env_names=
	rest=$forge_sandbox_env
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		# Under an allow-list the proxy variables are forge's, set inside.
		case $forge_bwrap_netmode/$line in
		restricted/[Hh][Tt][Tt][Pp]_[Pp][Rr][Oo][Xx][Yy] | restricted/[Hh][Tt][Tt][Pp][Ss]_[Pp][Rr][Oo][Xx][Yy] | \
			restricted/[Aa][Ll][Ll]_[Pp][Rr][Oo][Xx][Yy] | restricted/[Nn][Oo]_[Pp][Rr][Oo][Xx][Yy])
			forge_warn "sandbox.network.env: $line is not passed on: under an allow-list forge sets it inside"
			continue
			;;
		esac
		forge_bwrap_env_names=$forge_bwrap_env_names$line'
'
	done
}

# forge_bwrap_pin_parents PATH MOUNTS: PATH is mounted read-only; when the
# nearest of MOUNTS (the plan's lines so far, "rw PATH"/"ro PATH") that holds
# it is read-write, every folder between the two becomes a mount point of
# its own (bound onto itself), so the sandbox cannot rename one away and put
# a folder of its making in PATH's place (a core.hooksPath of .husky/_ in
# the worktree: a renamed .husky would leave a writable .husky/_ behind).
# Exits 73 when one of them is a symbolic link.
forge_bwrap_pin_parents() {
	local dir flag line near p rest tail
	near='' flag=''
	rest=$2
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		p=${line#* }
		if [ "$p" = "$1" ] || ! forge_path_within "$1" "$p" ||
			[ "${#p}" -lt "${#near}" ]; then
			continue
		fi
		near=$p flag=${line%% *}
	done
	[ "$flag" = rw ] || return 0
	tail=${1#"$near"/}
	dir=$near
	while :; do
		case $tail in */*) ;; *) return 0 ;; esac
		dir=$dir/${tail%%/*}
		tail=${tail#*/}
		if ! forge_is_real_dir "$dir"; then
			forge_die 73 "cannot protect $1: $dir on the way to it is not a folder (refusing to mount it)"
		fi
		forge_bwrap_add --bind "$dir" "$dir"
	done
}

# forge_bwrap_git_dir DIR [ext]: DIR, the worktree's own git dir when it is
# a linked worktree's (COMMON/worktrees/NAME, read-write in the plan, inside
# the read-only common dir): what tells the host's git where the common dir
# is and which config to read is read-only in it: commondir, gitdir and
# config.worktree (read by git once extensions.worktreeConfig is on, which
# the host's own git sets, e.g. with sparse-checkout, while the sandbox
# runs). A missing config.worktree is the one listed file forge
# makes (empty, as the mount point of an empty read-only one): git reads an
# empty one as no setting, and nothing else keeps the sandbox from creating
# one in a folder it must write (its index and HEAD are there).
forge_bwrap_git_dir() {
	local f
	for f in commondir gitdir config.worktree; do
		if [ -L "$1/$f" ] || { [ -e "$1/$f" ] && [ ! -f "$1/$f" ]; }; then
			forge_die 73 "cannot protect $1/$f: it is not a regular file (refusing to mount it)"
		elif [ -f "$1/$f" ]; then
			forge_bwrap_add --ro-bind "$1/$f" "$1/$f"
		elif [ "$f" = config.worktree ]; then
			forge_bwrap_add --ro-bind "$forge_bwrap_data/etc/empty" "$1/$f"
		fi
	done
}

# forge_bwrap_render_git ROOT COMMON: the host's git runs what a git
# dir's config names (core.hooksPath, core.fsmonitor, filters, ...), its
# hooks, reads the object stores its alternates list and follows its
# commondir file and a worktree's .git file. The plan (forge_mounts_git)
# mounts the root of the common dir COMMON read-only, and with it every git
# dir inside (other worktrees', submodules' under modules/), with only
# objects/, refs/, logs/ and the worktree's own git dir read-write; here,
# the files in that git dir that must stay read-only, and the .git of the
# worktree ROOT and of its submodules' checkouts: a file is made read-only
# (its gitdir: line), a folder (a submodule's own git dir) gets the
# common dir's rule. A symbolic link where one of those files or folders
# is (the host's git would follow it into a writable mount) exits 73; a
# path with a newline (the plan cannot carry it) 65.
forge_bwrap_render_git() {
	local d ext f g list
	for f in config config.worktree objects/info/alternates objects/info/http-alternates \
		info info/attributes worktrees modules; do
		[ ! -L "$2/$f" ] ||
			forge_die 73 "cannot protect $2/$f: it is a symbolic link (refusing to mount it)"
	done
	forge_git_common_dir "$1" || forge_die 69 "cannot find the git common dir of $1"
	if [ "$forge_git_dir" != "$2" ]; then
		ext=
		[ "$(forge_git --git-dir="$2" config --file "$2/config" --bool extensions.worktreeConfig 2>/dev/null)" != true ] ||
			ext=ext
		forge_bwrap_git_dir "$forge_git_dir" "$ext"
	fi
	list=$(forge_git -C "$1" ls-files --stage -z | tr '\n\0' '\001\n' | sed -n 's/^160000 [0-9a-f]* [0-9]	//p') ||
		forge_die 69 "cannot list the submodules of $1"
	list=.'
'$list'
'
	while [ -n "$list" ]; do
		d=${list%%'
'*}
		list=${list#*'
'}
		[ -n "$d" ] || continue
		case $d in *"$(printf '\001')"*) forge_die 65 "cannot protect a submodule of $1: its path contains a newline" ;; esac
		g=$1/$d/.git
		[ "$d" != . ] || g=$1/.git
		if [ -L "$g" ]; then
			forge_die 73 "cannot protect $g: it is a symbolic link (refusing to mount it)"
		elif [ -f "$g" ]; then
			forge_bwrap_add --ro-bind "$g" "$g"
		elif [ -d "$g" ] && [ "$g" != "$2" ]; then
			forge_bwrap_add --ro-bind "$g" "$g"
			for f in objects refs logs reftable; do
				forge_is_real_dir "$g/$f" &&
					forge_bwrap_add --bind "$g/$f" "$g/$f"
			done
			! forge_is_real_dir "$g/objects/info" ||
				forge_bwrap_add --ro-bind "$g/objects/info" "$g/objects/info"
		fi
	done
}

# --- lifecycle ----------------------------------------------------------------------

# forge_bwrap_running NAME: true when NAME's PID-namespace init runs; sets
# forge_bwrap_pid to it (the pid and start time recorded at up must match).
forge_bwrap_running() {
	local start
	forge_bwrap_state "$1"
	forge_bwrap_pid=
	[ -f "$forge_bwrap_dir/pid" ] || return 1
	read -r forge_brn_pid start <"$forge_bwrap_dir/pid" 2>/dev/null || return 1
	forge_is_uint "$forge_brn_pid" || return 1
	forge_proc_start "$forge_brn_pid"
	[ -n "$forge_proc_start" ] && [ "$forge_proc_start" = "$start" ] || return 1
	forge_bwrap_pid=$forge_brn_pid
}

# forge_bwrap_private_dirs: creates the state folder (owner-only) and the
# sandbox's private folders in forge_bwrap_data (as their owner): home, tmp,
# cache, an empty folder, passwd and group (after forge_bwrap_render).
forge_bwrap_private_dirs() {
	(umask 077 && mkdir -p -- "$forge_bwrap_root") || forge_die 73 "cannot create $forge_bwrap_root"
	if [ -L "$forge_bwrap_dir" ] || { [ -e "$forge_bwrap_dir" ] && [ ! -d "$forge_bwrap_dir" ]; }; then
		forge_die 73 "$forge_bwrap_dir is not a directory; refusing to use it"
	fi
	(umask 077 && mkdir -p -- "$forge_bwrap_dir") || forge_die 73 "cannot create $forge_bwrap_dir"
	chmod 0700 -- "$forge_bwrap_dir" || forge_die 73 "cannot make $forge_bwrap_dir owner-only"
	{ printf '%s\n' "$forge_bwrap_owner" >"$forge_bwrap_dir/owner" &&
		printf '%s\n' "$forge_bwrap_data" >"$forge_bwrap_dir/data"; } || forge_die 73 "cannot write $forge_bwrap_dir"
	# shellcheck disable=SC2016 # a script for sh, with its arguments
	forge_bwrap_as_owner sh -c '
		umask 077 && mkdir -p -- "$1" || exit
		for d in home tmp cache empty etc; do
			[ ! -L "$1/$d" ] || { echo "$1/$d is a symlink" >&2; exit 1; }
			mkdir -p -- "$1/$d" || exit
		done
		chmod 0755 "$1/empty" && chmod 1777 "$1/tmp" &&
		printf "root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:%s:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n" "$2" >"$1/etc/passwd" &&
		printf "root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n" >"$1/etc/group" &&
		: >"$1/etc/empty"' sh "$forge_bwrap_data" "$forge_bwrap_home" ||
		forge_die 73 "cannot create the private folders of the sandbox in $forge_bwrap_data"
}

# forge_bwrap_lock NAME: holds an exclusive lock on NAME's lifecycle (fd 8)
# until the program exits, so two up, or up and rm, never interleave; 75
# after 60 s. (forge-sandbox-init start closes fd 8: no sandbox holds it.)
forge_bwrap_lock() {
	forge_bwrap_state "$1"
	(umask 077 && mkdir -p -- "$forge_bwrap_root") || forge_die 73 "cannot create $forge_bwrap_root"
	[ ! -L "$forge_bwrap_root/$1.lock" ] || forge_die 73 "$forge_bwrap_root/$1.lock is a symlink; refusing to use it"
	exec 8>>"$forge_bwrap_root/$1.lock" || forge_die 73 "cannot create $forge_bwrap_root/$1.lock"
	flock -w 60 8 || forge_die 75 "another forge-sandbox is starting or removing $1 (it holds $forge_bwrap_root/$1.lock)"
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
			forge_sandbox_register "$2" "$1"
			forge_sandbox_drift_check "$1" "$2"
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
	forge_sandbox_register "$2" "$1"
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
	# Egress first: the proxy's socket must exist for bwrap to mount it.
	if [ "$forge_bwrap_rootfs_kind" = host ]; then
		ca=/etc/ssl/certs/ca-certificates.crt
	else
		ca=$forge_bwrap_rootfs/etc/ssl/certs/ca-certificates.crt
	fi
	forge_net_bwrap_prepare "$forge_bwrap_dir" "$forge_bwrap_netmode" "$forge_sandbox_egress_mode" "$forge_sandbox_egress_hosts" "$forge_sandbox_secrets" "$ca" "$forge_bwrap_data"
	rm -f -- "$forge_bwrap_dir/exec.sock" "$forge_bwrap_dir/status.json" "$forge_bwrap_dir/pid"
	: >"$forge_bwrap_dir/log"

	set -- "$forge_bwrap_init" start
	rest=$forge_bwrap_join
	while [ -n "$rest" ]; do
		set -- "$@" --cgroup "${rest%%'
'*}"
		rest=${rest#*'
'}
	done
	set -- "$@" --cpus "$forge_sandbox_cpus" --keep "$forge_bwrap_seccomp_fd" --keep "$forge_bwrap_status_fd" --keep 6
	[ -z "$forge_bwrap_owner" ] || set -- "$@" --user "$forge_bwrap_owner"
	set -- "$@" "$forge_bwrap_dir/exec.sock" "$forge_bwrap_sock_fd" --
	rest=$forge_bwrap_plan
	while [ -n "$rest" ]; do
		set -- "$@" "${rest%%'
'*}"
		rest=${rest#*'
'}
	done
	# Detached: its own session (forge-sandbox-init start), stdio to the log.
	# fd 6: the proxy variables with a token (forge-net.sh), else empty.
	(cd / && exec "$@" 4<"$forge_bwrap_dir/seccomp.bpf" 5>"$forge_bwrap_dir/status.json" 6<"$forge_bwrap_dir/proxy.args" \
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
}

# forge_bwrap_names: sets forge_bwrap_names to the namespace sandboxes
# (those with a state folder), one per line.
forge_bwrap_names() {
	forge_bwrap_state x
	forge_bwrap_names=
	for forge_bn in "$forge_bwrap_root"/forge-*; do
		forge_is_real_dir "$forge_bn" || continue
		forge_bwrap_names=$forge_bwrap_names${forge_bn##*/}'
'
	done
}

# --- ls and prune ---------------------------------------------------------------

# forge_bwrap_list: sets forge_bwrap_names (forge_bwrap_names) and
# forge_bwrap_ls_json, a JSON array of {name, backend, status, image,
# created_at} with status running or stopped.
forge_bwrap_list() {
	local name rest status
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
		forge_bl_image=
		[ ! -f "$forge_bwrap_dir/image" ] || read -r forge_bl_image <"$forge_bwrap_dir/image" || :
		set -- "$@" "$name" "$status" "$forge_bl_image"
	done
	forge_bwrap_ls_json=$(jq -cn '$ARGS.positional | [range(0; length; 3) as $i
		| {name: .[$i], backend: "bwrap", status: .[$i + 1],
		   image: (.[$i + 2] | if . == "" then null else . end), created_at: null}]' --args -- "$@") ||
		forge_die 70 "jq failed while listing the namespace sandboxes"
}

