# forge-bwrap-render.sh — the namespace backend's renderer (SPEC 4.5): the
# plan (forge_plan's JSON) as the bwrap argv: the root filesystem (image or
# host), /proc without what trusts uid 0, the mounts at identical paths,
# what makes the host's git run code read-only, the environment and what the
# sandbox sees of its network. Writes nothing (plan uses it too). The
# lifecycle is forge-bwrap.sh's.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

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

# forge_bwrap_render ROOT NAME PLAN [create]: renders the plan PLAN
# (forge_plan's JSON, for the worktree at ROOT and sandbox NAME) as bwrap's
# options in forge_bwrap_plan (forge_bwrap_add; forge_bwrap_argv_print
# writes the argv NUL-separated); sets the plan's shell view
# (forge_plan_view), which the lifecycle uses. Sets forge_bwrap_rootfs (the
# image's exported folder, for rootfs image), forge_bwrap_env_names and
# forge_bwrap_netmode (restricted or open: what forge-net.sh is to start).
forge_bwrap_render() {
	local common dests env line path rest mounted
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
	forge_bwrap_add --unshare-user --uid 1000 --gid 1000 --unshare-pid --unshare-ipc --unshare-uts \
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
	rest=$forge_plan_mounts mounted=
	while [ -n "$rest" ]; do
		line=${rest%%'
'*}
		rest=${rest#*'
'}
		path=${line#* }
		if [ "${line%% *}" = ro ]; then
			forge_bwrap_pin_parents "$path" "$mounted"
			forge_bwrap_add --ro-bind "$path" "$path"
		else
			forge_bwrap_add --bind "$path" "$path"
		fi
		mounted=$mounted$line'
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
	# The network (forge-net-bwrap.sh): what the sandbox must see of it at start.
	forge_net_mode "$forge_sandbox_egress_mode" "$forge_sandbox_secrets"
	forge_bwrap_netmode=$forge_net_mode
	forge_net_bwrap_render "$forge_bwrap_data" "$forge_bwrap_netmode" "$forge_sandbox_secrets"
	forge_bwrap_add --chdir "$1"

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
# submodule path with a newline 65 (git's NUL-separated list of them is
# read a line each here).
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
