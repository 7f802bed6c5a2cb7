# Shared by the forge-sandbox tests: a scratch repository per test, a
# private MSB_HOME, the real msb (need_msb) or the test double in t/stubs/
# (use_stub), and helpers to read plans and logged msb calls.
#
# The real msb is $FORGE_MSB, else msb on PATH. Without it the tests that
# need it are skipped, except in CI (CI=true), where they fail.

# The real msb, remembered before any test points FORGE_MSB at a stub.
: "${REAL_MSB:=${FORGE_MSB:-$(command -v msb 2>/dev/null || :)}}"
export REAL_MSB

sandbox_setup() {
	load_support
	forge_test_setup
	unset FORGE_MSB FORGE_SANDBOX_CONTAINER FORGE_SANDBOX_WAIT FORGE_SANDBOX_DOCTOR_TIMEOUT STUB_DIR
	export MSB_HOME="${FILE_MSB_HOME:-$SCRATCH/msb-home}"
	export XDG_STATE_HOME="${FILE_STATE_HOME:-$HOME/.local/state}"
	forge_test_repo
	# Physical: forge names and mounts real paths.
	REPO=$(pwd -P)
}

# bwrap_setup: sandbox_setup for a file of real namespace sandboxes: bwrap
# must work here (need_bwrap); the user's configuration selects the bwrap
# backend on the host's root filesystem. Sets NAME (the sandbox's name) and
# STATE (its state folder).
# shellcheck disable=SC2034 # NAME, STATE: for the tests
bwrap_setup() {
	sandbox_setup
	need_bwrap
	user_config '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}}}'
	NAME=$(expected_name "$REPO")
	STATE=$XDG_STATE_HOME/forge/bwrap/$NAME
}

# need_bwrap: skip the test (fail it in CI) when bwrap cannot create user
# and network namespaces here; sets BWRAP (a namespace sandbox may be up).
# shellcheck disable=SC2034 # BWRAP: for the file's teardown
need_bwrap() {
	if ! bwrap --unshare-user --unshare-net --ro-bind / / true 2>/dev/null; then
		[ "${CI:-}" != true ] || fail "bwrap cannot create user namespaces on this CI host"
		skip "this host cannot create user namespaces (bwrap --unshare-user fails)"
	fi
	BWRAP=1
}

# user_config JSON: the user's forge configuration.
user_config() {
	mkdir -p "$XDG_CONFIG_HOME/forge"
	printf '%s\n' "$1" >"$XDG_CONFIG_HOME/forge/config.json"
}

# owner_worktree USER: (as root) USER, a new user whose home is
# $SCRATCH/owner, owns the repository OWNER_REPO there; git is told to trust
# it. The file's teardown removes OWNER (the user) and OWNER_REPO's sandbox.
owner_worktree() {
	OWNER=$1
	chmod 755 "$SCRATCH"
	useradd -M -d "$SCRATCH/owner" -s /bin/sh "$OWNER"
	mkdir -p "$SCRATCH/owner"
	make_repo "$SCRATCH/owner/repo"
	chown -R "$OWNER:" "$SCRATCH/owner"
	# git refuses a repository another user owns unless told.
	git config --global safe.directory '*'
	# shellcheck disable=SC2034 # the test's
	OWNER_REPO=$SCRATCH/owner/repo
}

# init_pid: the PID of the namespace sandbox's init, as up recorded it.
init_pid() { cut -d' ' -f1 "$STATE/pid"; }

# in_sandbox COMMAND...: forge-sandbox exec in the repository's sandbox.
in_sandbox() { forge-sandbox exec "$REPO" -- "$@"; }

# as_nobody COMMAND...: COMMAND as the unprivileged user nobody, with its own
# HOME, state, configuration, cache and TMPDIR under $SCRATCH/nobody.
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups -- env HOME="$SCRATCH/nobody" \
		XDG_STATE_HOME="$SCRATCH/nobody/.local/state" XDG_CONFIG_HOME="$SCRATCH/nobody/.config" \
		XDG_CACHE_HOME="$SCRATCH/nobody/.cache" TMPDIR="$SCRATCH/nobody/tmp" "$@"
}

# nobody_sandbox: NOBODY_REPO, a repository nobody owns, with its sandbox
# up as nobody (an allow-list: open egress needs /dev/net/tun open to nobody).
nobody_sandbox() {
	chmod 755 "$SCRATCH"
	mkdir -p "$SCRATCH/nobody/.config/forge" "$SCRATCH/nobody/tmp"
	printf '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"allow": ["example.com"]}}}\n' \
		>"$SCRATCH/nobody/.config/forge/config.json"
	make_repo "$SCRATCH/nobody/repo"
	chown -R 65534:65534 "$SCRATCH/nobody"
	NOBODY_REPO=$SCRATCH/nobody/repo
	as_nobody forge-sandbox up "$NOBODY_REPO" >/dev/null
}

# need_msb: skip the test (fail it in CI) when the real msb is missing.
need_msb() {
	if [ -n "$REAL_MSB" ] && [ -x "$REAL_MSB" ]; then
		export FORGE_MSB="$REAL_MSB"
		return 0
	fi
	[ "${CI:-}" != true ] || fail "the real msb is required in CI: set FORGE_MSB (build-aux/install-deps installs it)"
	skip "msb not installed (set FORGE_MSB to run these tests against it)"
}

# use_stub: point FORGE_MSB at the msb test double; its log and answers live
# in $STUB_DIR.
use_stub() {
	export STUB_DIR="$SCRATCH/stub"
	mkdir -p "$STUB_DIR"
	export FORGE_MSB="${abs_top_srcdir:?}/t/stubs/msb-stub"
}

# use_real_wrapper [doctor-ok]: the real msb behind a wrapper that logs each
# call to $STUB_DIR/calls; with doctor-ok, "msb doctor" answers 0 (this host
# cannot boot a VM) and every other call goes to the real msb.
use_real_wrapper() {
	export STUB_DIR="$SCRATCH/stub"
	mkdir -p "$STUB_DIR"
	export FORGE_MSB="${abs_top_srcdir:?}/t/stubs/msb-real-wrapper"
	if [ "${1:-}" = doctor-ok ]; then export STUB_DOCTOR_OK=1; else unset STUB_DOCTOR_OK; fi
}

# stub_calls: the logged msb calls, one per line, arguments joined by spaces.
stub_calls() {
	[ -f "$STUB_DIR/calls" ] || return 0
	awk '$0 == "--end--" { print line; line = ""; sep = ""; next } { line = line sep $0; sep = " " }' "$STUB_DIR/calls"
}

# stub_call N: sets the array argv to the arguments of the Nth logged call.
stub_call() {
	argv=()
	local n=0 line
	while IFS= read -r line; do
		if [ "$line" = --end-- ]; then
			n=$((n + 1))
			[ "$n" -lt "$1" ] || return 0
			argv=()
		else
			argv+=("$line")
		fi
	done <"$STUB_DIR/calls"
	fail "no call $1 in the stub's log"
}

# plan_argv [ARG...]: sets the array plan to `forge-sandbox plan -z ARG...`.
plan_argv() {
	plan=()
	local a
	while IFS= read -r -d '' a; do plan+=("$a"); done < <(forge-sandbox plan -z "$@")
	[ "${#plan[@]}" -gt 0 ] || fail "forge-sandbox plan printed nothing"
}

# plan_values FLAG: the values following each FLAG in the array plan.
plan_values() {
	local i
	for ((i = 0; i < ${#plan[@]} - 1; i++)); do
		[ "${plan[i]}" != "$1" ] || printf '%s\n' "${plan[i + 1]}"
	done
}

# expected_name DIR: forge-<slug>-<h>, computed here independently of forge.
expected_name() {
	local real base slug
	real=$(cd "$1" && pwd -P)
	base=${real##*/}
	slug=$(printf '%s' "$base" | LC_ALL=C tr 'A-Z\n' 'a-z_' | LC_ALL=C sed -E 's/[^a-z0-9.-]+/-/g; s/^[.-]+//; s/[.-]+$//')
	slug=${slug:0:40}
	printf 'forge-%s-%s\n' "${slug:-sandbox}" "$(printf '%s' "$real" | sha256sum | cut -c1-8)"
}

# write_config JSON: a configuration the user chose, as $FORGE_CONFIG (the
# keys that decide what the sandbox may reach are ignored in the
# repository's forge.json; write_repo_config writes that one).
write_config() {
	printf '%s\n' "$1" >"$SCRATCH/forge-config.json"
	export FORGE_CONFIG="$SCRATCH/forge-config.json"
}

# write_repo_config JSON: the repository's own forge.json (untrusted).
write_repo_config() {
	printf '%s\n' "$1" >"$REPO/forge.json"
}

# make_msb_image DIR TAG: builds a tiny image archive in DIR the way
# `docker save` writes one (manifest.json, config, one layer tar; no docker
# needed) and loads it into msb as TAG. Its root filesystem holds a busybox
# when there is one: no VM boots here, so its content hardly matters.
make_msb_image() {
	local dir=$1 tag=$2 layer config bb
	mkdir -p "$dir/rootfs/bin" "$dir/img"
	bb=$(command -v busybox || :)
	if [ -n "$bb" ]; then cp "$bb" "$dir/rootfs/bin/busybox"; else printf '#!/bin/sh\n' >"$dir/rootfs/bin/sh"; fi
	tar -C "$dir/rootfs" -cf "$dir/layer.tar" .
	layer=$(sha256sum <"$dir/layer.tar" | cut -c1-64)
	printf '{"architecture":"amd64","os":"linux","config":{"Cmd":["/bin/sh"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$layer" >"$dir/config.json"
	config=$(sha256sum <"$dir/config.json" | cut -c1-64)
	mv "$dir/layer.tar" "$dir/img/$layer.tar"
	mv "$dir/config.json" "$dir/img/$config.json"
	jq -n --arg c "$config.json" --arg l "$layer.tar" --arg t "$tag" \
		'[{Config: $c, RepoTags: [$t], Layers: [$l]}]' >"$dir/img/manifest.json"
	tar -C "$dir/img" -cf "$dir/image.tar" .
	"$REAL_MSB" load --input "$dir/image.tar" --tag "$tag" --quiet
}

# select_msb_backend: the user's configuration selects the msb backend, for
# the tests about msb's argv and calls (auto would pick the namespace
# backend on a host that cannot boot microVMs).
select_msb_backend() { user_config '{"sandbox": {"backend": "msb"}}'; }

# alive PID: true when PID is a live process (not a zombie).
alive() {
	local stat
	read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}

# running_with MARKER: true when a live process on this host has MARKER in
# its command line (the sandbox's processes are host processes too).
# (pgrep -f matches the same text: the arguments joined by spaces. One
# pgrep reads every command line; a pipe per process took seconds on a
# busy host, in every iteration of the tests' wait loops.)
running_with() {
	local pid
	for pid in $(pgrep -f -- "$1"); do
		alive "$pid" && return 0
	done
	return 1
}
