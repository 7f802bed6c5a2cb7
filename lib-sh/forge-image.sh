# forge-image.sh — `forge-sandbox build-image`: docker build, docker save,
# msb load, with live progress (SPEC section 4.1). Part of forge.sh; source
# that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_image_build [--tag REF] [--context DIR]: builds the sandbox image
# from DIR (default: <pkgdatadir>/container) as REF (default: sandbox.image
# of the configuration, loaded here unless forge_config is already set, with
# the forge.json of $forge_root, else of the repository around the current
# directory if any), saves it to a temporary tar and loads
# it into msb's image store; the tar is removed whatever happens. Progress on
# stderr: one updating line (elapsed time, current Docker step) when stderr
# is a terminal (and TERM is not dumb), timestamped lines otherwise; on a failure the last 20 lines
# of the failing command's output. Prints REF on stdout when done.
# The work runs in a subshell with its own traps, so the caller's traps and
# options are untouched; the function returns its status:
# 0 done, 1 docker build / docker save / msb load failed, 64 usage,
# 65 invalid sandbox.image, 69 docker, its daemon, msb or flock unavailable
# (or no Dockerfile in the default context), 73 cannot create the lock file
# or the temporary folder, 75 another build-image holds the lock,
# 128+n interrupted by signal n (after cleanup).
# The lock is per user: ${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/forge-build-image-<uid>.lock;
# the tar is written under ${TMPDIR:-/tmp}. msb is $FORGE_MSB, else msb on PATH.
forge_image_build() {
	local ref_set ctx_set why rc ref ctx msb
	ref='' ref_set='' ctx='' ctx_set=''
	while [ "$#" -gt 0 ]; do
		case $1 in
		--tag | --context)
			[ "$#" -ge 2 ] || forge_usage_error "option '$1' needs an argument"
			case $1 in
			--tag) ref=$2 ref_set=1 ;;
			*) ctx=$2 ctx_set=1 ;;
			esac
			shift
			;;
		--tag=*) ref=${1#*=} ref_set=1 ;;
		--context=*) ctx=${1#*=} ctx_set=1 ;;
		*) forge_usage_error "build-image: unknown argument '$1'" ;;
		esac
		shift
	done

	if [ -n "$ref_set" ]; then
		forge_image_ref_valid "$ref" ||
			forge_usage_error "invalid image reference '$ref'"
	else
		if [ -z "${forge_config:-}" ]; then
			forge_require_tool jq
			# Inside a repository, its forge.json counts too.
			if [ -z "${forge_root:-}" ] && command -v git >/dev/null 2>&1; then
				forge_repo_root . || forge_root=''
			fi
			forge_config_load "${forge_root:-}"
		fi
		ref=$(forge_config_get sandbox.image)
		forge_image_ref_valid "$ref" ||
			forge_die 65 "sandbox.image: invalid image reference '$ref'"
	fi

	if [ -n "$ctx_set" ]; then
		[ -d "$ctx" ] || forge_usage_error "--context $ctx: no such folder"
		[ -f "$ctx/Dockerfile" ] ||
			forge_usage_error "--context $ctx: no Dockerfile in it"
	else
		ctx=$(forge_pkgdatadir)/container
		[ -f "$ctx/Dockerfile" ] ||
			forge_die 69 "no Dockerfile in $ctx: forge's container files are not installed"
	fi
	# docker must not take the folder for an option.
	case $ctx in -*) ctx=./$ctx ;; esac

	forge_require_tool docker flock
	# Found as every msb is (forge_msb_find: $FORGE_MSB, else on PATH).
	if ! forge_msb_find; then
		[ -z "${FORGE_MSB:-}" ] ||
			forge_die 69 "msb not found: FORGE_MSB=$FORGE_MSB is not an absolute path to an executable"
		forge_die 69 "required program 'msb' not found on PATH (install microsandbox, or set FORGE_MSB)"
	fi
	msb=$forge_msb
	if ! why=$(docker info 2>&1 >/dev/null); then
		why=$(printf '%s\n' "$why" | grep -v '^[[:space:]]*$' | tail -n 1)
		forge_die 69 "the Docker daemon is not answering (${why:-docker info failed}); start it first (systemctl start docker, or forge-dockerd-start as root)"
	fi

	rc=0
	(forge_image_run "$ref" "$ctx" "$msb") || rc=$?
	return "$rc"
}

# forge_image_run REF CONTEXT MSB: the build proper (REF built from the
# folder CONTEXT, loaded with the msb program MSB); runs in a subshell (its
# traps and `exit`s stay there).
forge_image_run() {
	local lock rc tar ref ctx msb log size cols
	ref=$1 ctx=$2 msb=$3
	forge_image_tmp='' forge_image_child='' forge_image_ticker='' forge_image_follower=''
	trap 'forge_image_cleanup' EXIT
	trap 'forge_image_interrupted 1' HUP
	trap 'forge_image_interrupted 2' INT
	trap 'forge_image_interrupted 15' TERM

	lock=${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/forge-build-image-$(id -u).lock
	(: >>"$lock") 2>/dev/null ||
		forge_die 73 "cannot create the lock file $lock"
	exec 9>>"$lock"
	flock -n 9 ||
		forge_die 75 "another build-image is running (it holds $lock); try again when it is done"

	forge_image_tmp=$(mktemp -d "${TMPDIR:-/tmp}/forge-build-image.XXXXXX") ||
		forge_die 73 "cannot create a temporary folder in ${TMPDIR:-/tmp}"
	log=$forge_image_tmp/docker-build.log
	tar=$forge_image_tmp/image.tar
	forge_image_start=$(date +%s)
	# The updating line needs a terminal that knows "erase to end of line".
	forge_image_cols=
	if [ -t 2 ] && [ "${TERM:-dumb}" != dumb ]; then
		forge_image_cols=80
		# "ROWS COLS" from stty.
		size=$(stty size <&2 2>/dev/null) || :
		cols=${size#* }
		if forge_is_uint "$cols" && [ "$cols" -ge 20 ]; then forge_image_cols=$cols; fi
		forge_image_ticker_start
	fi

	# docker build, its output through a FIFO to the follower (which keeps
	# the log and reports the steps), so that docker runs in the background
	# and a signal interrupts the wait at once.
	forge_image_phase "docker build -t $ref $ctx"
	mkfifo "$forge_image_tmp/out" || forge_die 73 "cannot create a FIFO in $forge_image_tmp"
	forge_image_follow "$log" <"$forge_image_tmp/out" 9>&- &
	forge_image_follower=$!
	BUILDKIT_PROGRESS=plain docker build -t "$ref" "$ctx" \
		</dev/null >"$forge_image_tmp/out" 2>&1 9>&- &
	rc=0
	forge_image_wait || rc=$?
	wait "$forge_image_follower" || :
	forge_image_follower=
	[ "$rc" -eq 0 ] ||
		forge_image_fail "docker build failed (exit $rc)" "$log"

	forge_image_phase "docker save $ref"
	docker save "$ref" -o "$tar" \
		</dev/null >"$forge_image_tmp/save.log" 2>&1 9>&- &
	rc=0
	forge_image_wait || rc=$?
	[ "$rc" -eq 0 ] ||
		forge_image_fail "docker save failed (exit $rc)" "$forge_image_tmp/save.log"

	forge_image_phase "msb load --tag $ref"
	"$msb" load --input "$tar" --tag "$ref" --quiet \
		</dev/null >"$forge_image_tmp/load.log" 2>&1 9>&- &
	rc=0
	forge_image_wait || rc=$?
	[ "$rc" -eq 0 ] ||
		forge_image_fail "msb load failed (exit $rc)" "$forge_image_tmp/load.log"

	forge_image_ticker_stop
	forge_say "built $ref and loaded it into msb in $(forge_image_elapsed)"
	printf '%s\n' "$ref"
}

# forge_image_wait: waits for the last background command (forge_image_child
# while it runs, so a signal handler can stop it); returns its exit status.
forge_image_wait() {
	local rc
	forge_image_child=$!
	rc=0
	wait "$forge_image_child" || rc=$?
	forge_image_child=
	return "$rc"
}

# forge_image_follow LOG: reads Docker's output on stdin, keeps all of it in
# LOG and reports each new step: BuildKit's plain progress
# ("#5 [2/7] RUN ...", the first line of each vertex) or the legacy builder's
# "Step 2/7 : RUN ...", as "[2/7] RUN ...". (A shell loop, not awk: mawk
# reads a pipe in blocks and would report the steps late.)
forge_image_follow() {
	local seen last line vertex step
	exec 3>"$1"
	seen=' ' last='' line=''
	while IFS= read -r line || [ -n "$line" ]; do
		printf '%s\n' "$line" >&3
		case $line in
		'#'[0-9]*' '*)
			vertex=${line%% *}
			case $seen in *" $vertex "*) continue ;; esac
			seen="$seen$vertex "
			step=${line#* }
			;;
		'Step '[0-9]*'/'[0-9]*' : '*)
			step=${line#Step }
			step="[${step%% : *}] ${step#* : }"
			;;
		*) continue ;;
		esac
		[ "$step" != "$last" ] || continue
		last=$step
		forge_image_phase "$step"
	done
	exec 3>&-
}

# forge_image_phase TEXT: reports what is running now: the updating line on
# a terminal (forge_image_cols set), a timestamped line otherwise.
forge_image_phase() {
	if [ -n "$forge_image_cols" ]; then
		printf '%s\n' "$1" >"$forge_image_tmp/step.new" &&
			mv -f "$forge_image_tmp/step.new" "$forge_image_tmp/step"
		forge_image_draw "$1"
	else
		forge_say "$(date +%H:%M:%S) +$(forge_image_elapsed) $1"
	fi
}

# forge_image_elapsed: prints the time since the start as M:SS (H:MM:SS).
forge_image_elapsed() {
	local secs
	secs=$(($(date +%s) - forge_image_start))
	if [ "$secs" -ge 3600 ]; then
		printf '%d:%02d:%02d\n' "$((secs / 3600))" \
			"$((secs / 60 % 60))" "$((secs % 60))"
	else
		printf '%d:%02d\n' "$((secs / 60))" "$((secs % 60))"
	fi
}

# forge_image_draw TEXT: redraws the progress line (carriage return, the
# line cut to the terminal's width, erase to the end of the line).
forge_image_draw() {
	printf '\r%.*s\033[K' "$((forge_image_cols - 1))" "${forge_prog:-forge}: $(forge_image_elapsed) $1" >&2
}

# forge_image_ticker_start: redraws the line every second, so the clock runs
# while a step prints nothing.
forge_image_ticker_start() {
	local now
	(
		trap - EXIT HUP INT TERM
		while [ -d "$forge_image_tmp" ]; do
			now=
			[ ! -f "$forge_image_tmp/step" ] ||
				IFS= read -r now <"$forge_image_tmp/step" || :
			[ -z "$now" ] || forge_image_draw "$now"
			# An orphaned sleep must not hold our stderr open.
			sleep 1 >/dev/null 2>&1
		done
	) 9>&- &
	forge_image_ticker=$!
}

# forge_image_ticker_stop: stops the ticker and clears the progress line.
forge_image_ticker_stop() {
	[ -n "$forge_image_ticker" ] || return 0
	kill "$forge_image_ticker" 2>/dev/null || :
	wait "$forge_image_ticker" 2>/dev/null || :
	forge_image_ticker=
	printf '\r\033[K' >&2
}

# forge_image_fail MESSAGE LOG: reports a failed command with the last 20
# lines of its output, then exits 1 (the EXIT trap cleans up).
forge_image_fail() {
	forge_image_ticker_stop
	forge_error "$1; the last 20 lines of its output:"
	tail -n 20 -- "$2" | forge_printable_lines '| ' >&2 || :
	exit 1
}

# forge_image_cleanup: the EXIT trap: stops what still runs, removes the
# temporary folder (and the tar in it).
forge_image_cleanup() {
	if [ -n "$forge_image_child" ]; then
		kill "$forge_image_child" 2>/dev/null || :
		wait "$forge_image_child" 2>/dev/null || :
		forge_image_child=
	fi
	if [ -n "$forge_image_follower" ]; then
		# Not waiting for end-of-file: a child of docker may still hold
		# the FIFO open.
		kill "$forge_image_follower" 2>/dev/null || :
		wait "$forge_image_follower" 2>/dev/null || :
		forge_image_follower=
	fi
	forge_image_ticker_stop
	if [ -n "$forge_image_tmp" ]; then
		rm -rf -- "$forge_image_tmp"
		forge_image_tmp=
	fi
}

# forge_image_interrupted N: the INT/TERM/HUP trap: cleans up, exits 128+N.
forge_image_interrupted() {
	trap '' HUP INT TERM
	forge_image_cleanup
	forge_error "build-image interrupted; cleaned up"
	trap - EXIT
	exit "$((128 + $1))"
}

# --- the namespace backend's root filesystem: a Docker image exported ----------

# forge_bwrap_image_rootfs IMAGE [create]: sets forge_bwrap_rootfs to IMAGE
# exported from the local Docker image store into the cache, keyed by image
# ID: ${XDG_CACHE_HOME:-$HOME/.cache}/forge/rootfs/<id>/, with <id>.env
# holding its ENV (docker export drops it). With create, exports it when
# missing, and exits 69 when docker or the image is missing; without (plan),
# nothing is run but docker image inspect, and forge_bwrap_rootfs stays
# empty, with a warning, when the image is not exported yet.
forge_bwrap_image_rootfs() {
	local cache cid id ok tmp why
	forge_bwrap_rootfs=
	why=
	if ! command -v docker >/dev/null 2>&1; then
		why="docker not found: sandbox.bwrap.rootfs \"image\" takes the image from Docker (or set it to \"host\")"
	elif ! id=$(docker image inspect --format '{{.Id}}' -- "$1" 2>/dev/null); then
		why="image $1 is not in the local Docker image store (is dockerd running?); build it with: forge-sandbox build-image --tag $1, or set sandbox.bwrap.rootfs to \"host\""
	fi
	if [ -n "$why" ]; then
		[ "${2:-}" = create ] && forge_die 69 "$why"
		forge_warn "$why; the root filesystem is left out of this plan"
		return 0
	fi
	id=${id#sha256:}
	case $id in '' | *[!0-9a-f]*) forge_die 69 "docker gave an unexpected image ID for $1" ;; esac
	forge_xdg_dir cache || forge_xdg=/nonexistent/.cache
	cache=$forge_xdg/forge/rootfs
	forge_bwrap_rootfs=$cache/$id
	! forge_is_real_dir "$forge_bwrap_rootfs" || return 0
	if [ "${2:-}" != create ]; then
		forge_warn "image $1 is not exported yet (forge-sandbox up does it): its folders are left out of this plan"
		forge_bwrap_rootfs=
		return 0
	fi
	mkdir -p -- "$cache" || forge_die 73 "cannot create $cache"
	forge_say "exporting $1 into $forge_bwrap_rootfs"
	tmp=$(mktemp -d "$cache/.export.XXXXXX") || forge_die 73 "cannot create a folder in $cache"
	docker image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' -- "$1" >"$tmp.env" ||
		{ forge_rm_tree "$tmp"; forge_die 69 "docker image inspect failed for $1"; }
	# A placeholder command: export needs a container, and an image may have no CMD.
	cid=$(docker create -- "$1" forge-rootfs-export 2>/dev/null) ||
		{ forge_rm_tree "$tmp"; rm -f -- "$tmp.env"; forge_die 69 "docker create failed for $1"; }
	ok=0
	docker export -- "$cid" | tar -x -C "$tmp" --no-same-owner --exclude='dev/*' ||
		ok=1
	docker rm -- "$cid" >/dev/null 2>&1 || forge_warn "cannot remove the container $cid"
	if [ "$ok" != 0 ]; then
		forge_rm_tree "$tmp"
		rm -f -- "$tmp.env"
		forge_die 69 "docker export of $1 failed"
	fi
	{ mv -f -- "$tmp.env" "$forge_bwrap_rootfs.env" &&
		mv -- "$tmp" "$forge_bwrap_rootfs"; } || forge_die 73 "cannot move the rootfs into $forge_bwrap_rootfs"
}
