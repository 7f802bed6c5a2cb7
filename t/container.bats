#!/usr/bin/env bats
# container/: the Dockerfile (read, not built: its sources are out of reach
# here), forge-dockerd-start (stubs, then the real dockerd) and
# forge-cache-prune (SPEC section 7).
load test_helper
load container-fixtures/docker
setup() {
	load_support
	forge_test_setup
	C=$abs_top_srcdir/container
	STUB_STATE=$SCRATCH/state
	mkdir -p "$STUB_STATE" "$SCRATCH/stubs"
	export STUB_STATE
}
teardown() {
	# Stub daemons, and a private real dockerd, must not outlive the test.
	local pid
	for pid in $(cat "$STUB_STATE"/pids "$SCRATCH"/dockerd.pid 2>/dev/null); do
		kill "$pid" 2>/dev/null || :
	done
	for pid in $(cat "$STUB_STATE"/pids "$SCRATCH"/dockerd.pid 2>/dev/null); do
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	done
	docker_unlock
	forge_test_teardown
}

# --- Dockerfile ------------------------------------------------------------

# env_value NAME: the value the Dockerfile's ENV instructions give NAME.
env_value() {
	sed -n "s/^\\(ENV\\)\\{0,1\\}[[:space:]]*$1=\\([^[:space:]\\\\]*\\).*/\\2/p" "$C/Dockerfile" | tail -n 1
}

@test "Dockerfile: base image argument, final USER agent, no ENTRYPOINT or CMD" {
	run grep -c '^ARG BASE_IMAGE=ubuntu:24.04$' "$C/Dockerfile"
	assert_output 1
	grep -q '^FROM \${BASE_IMAGE}$' "$C/Dockerfile"
	run sh -c "grep '^USER ' '$C/Dockerfile' | tail -n 1"
	assert_output 'USER agent'
	# USER agent is the last instruction that changes anything.
	run sh -c "grep -E '^[A-Z]+ ' '$C/Dockerfile' | tail -n 1"
	assert_output 'USER agent'
	run grep -Ei '^[[:space:]]*(ENTRYPOINT|CMD)([[:space:]]|$)' "$C/Dockerfile"
	assert_failure
}

@test "Dockerfile: HOME, XDG_CACHE_HOME and every cache variable of SPEC 7; tool bins on PATH" {
	local cache=/opt/forge/.cache
	[ "$(env_value HOME)" = /opt/forge ]
	[ "$(env_value XDG_CACHE_HOME)" = "$cache" ]
	[ "$(env_value PNPM_CONFIG_STORE_DIR)" = "$cache/pnpm/store" ]
	[ "$(env_value npm_config_store_dir)" = "$cache/pnpm/store" ]
	[ "$(env_value npm_config_cache)" = "$cache/npm" ]
	[ "$(env_value UV_PYTHON_INSTALL_DIR)" = "$cache/uv-python" ]
	[ "$(env_value UV_TOOL_DIR)" = "$cache/uv-tools" ]
	[ "$(env_value UV_TOOL_BIN_DIR)" = "$cache/uv-bin" ]
	[ "$(env_value CARGO_HOME)" = "$cache/cargo" ]
	[ "$(env_value RUSTUP_HOME)" = "$cache/rustup" ]
	[ "$(env_value GOPATH)" = "$cache/go" ]
	local path
	path=$(env_value PATH)
	[[ :$path: == *":$cache/uv-bin:"* ]]
	[[ :$path: == *":$cache/cargo/bin:"* ]]
	[[ :$path: == *":$cache/go/bin:"* ]]
	[[ $path == *'${PATH}' ]]
}

@test "Dockerfile: nothing is installed after the caches point at the cache disk" {
	# The cache disk hides whatever the image put in /opt/forge/.cache, so
	# every RUN (global npm installs among them) comes before the ENV.
	local env_line run_line
	env_line=$(grep -n 'XDG_CACHE_HOME=' "$C/Dockerfile" | head -n 1 | cut -d: -f1)
	run_line=$(grep -n '^RUN ' "$C/Dockerfile" | tail -n 1 | cut -d: -f1)
	[ "$run_line" -lt "$env_line" ]
	grep -q -- '--cache /tmp/' "$C/Dockerfile"
}

@test "Dockerfile: agent 1000:1000, passwordless sudo 0440, group docker, safe.directory, the scripts" {
	grep -q -- 'groupadd --gid 1000 agent' "$C/Dockerfile"
	grep -q -- 'useradd --uid 1000 --gid 1000 --groups docker --home-dir /opt/forge' "$C/Dockerfile"
	grep -q "NOPASSWD: ALL.*>/etc/sudoers.d/agent" "$C/Dockerfile"
	grep -q 'chmod 0440 /etc/sudoers.d/agent' "$C/Dockerfile"
	grep -q 'visudo -cf /etc/sudoers.d/agent' "$C/Dockerfile"
	grep -q "git config --system --add safe.directory '\\*'" "$C/Dockerfile"
	grep -q '^COPY forge-dockerd-start forge-cache-prune /usr/local/bin/$' "$C/Dockerfile"
	# The context lets in exactly the two scripts and the agents' note.
	run grep -v '^#' "$C/.dockerignore"
	assert_output $'*\n!forge-dockerd-start\n!forge-cache-prune\n!AGENTS.md'
	[ -x "$C/forge-dockerd-start" ]
	[ -x "$C/forge-cache-prune" ]
}

@test "Dockerfile: the toolchain of SPEC 7 from its upstream sources" {
	local p
	for p in docker-ce docker-ce-cli containerd.io docker-buildx-plugin docker-compose-plugin \
		download.docker.com/linux/ deb.nodesource.com/setup_current.x nodejs pnpm bun \
		python3 astral.sh/uv/install.sh ripgrep git jq sudo; do
		grep -q -- "$p" "$C/Dockerfile" || fail "Dockerfile lacks $p"
	done
	grep -q '^SHELL \["/bin/bash", "-euo", "pipefail", "-c"\]$' "$C/Dockerfile"
}

# obscura_setup: stubs for the Obscura RUN instruction: uname says x86_64,
# curl serves a fake release archive (an `obscura` that answers --help) and
# the release API's answer from $SCRATCH/release.json, logging each URL.
obscura_setup() {
	mkdir -p "$SCRATCH/obscura/pkg" "$SCRATCH/bin"
	printf '#!/bin/sh\necho obscura help\n' >"$SCRATCH/obscura/pkg/obscura"
	printf '#!/bin/sh\n' >"$SCRATCH/obscura/pkg/obscura-worker"
	chmod +x "$SCRATCH/obscura/pkg/"*
	tar -czf "$SCRATCH/obscura/asset.tar.gz" -C "$SCRATCH/obscura/pkg" obscura obscura-worker
	ASSET_SUM=$(sha256sum <"$SCRATCH/obscura/asset.tar.gz" | cut -c1-64)
	printf '#!/bin/sh\necho x86_64\n' >"$SCRATCH/stubs/uname"
	cat >"$SCRATCH/stubs/curl" <<'STUB'
#!/bin/sh
out= url=
while [ "$#" -gt 0 ]; do
	case $1 in -o) out=$2; shift ;; -*) ;; *) url=$1 ;; esac
	shift
done
echo "$url" >>"$SCRATCH/curl.log"
case $url in
https://github.com/h4ckf0r0day/obscura/releases/download/*/obscura-x86_64-linux.tar.gz) cp "$SCRATCH/obscura/asset.tar.gz" "$out" ;;
https://api.github.com/repos/h4ckf0r0day/obscura/releases/tags/*) cat "$SCRATCH/release.json" ;;
*) exit 22 ;;
esac
STUB
	chmod +x "$SCRATCH/stubs/uname" "$SCRATCH/stubs/curl"
	export SCRATCH
}

# obscura_run [OBSCURA_SHA256]: runs the Dockerfile's Obscura RUN instruction
# as docker would (continuation lines joined, bash -euo pipefail, the ARGs in
# the environment), installing into $SCRATCH/bin instead of /usr/local/bin.
obscura_run() {
	local script version
	script=$(awk '/^RUN arch=\$\(uname -m\)/ { on = 1 } on { print; if ($0 !~ /\\$/) exit }' "$C/Dockerfile" |
		sed -e 's/^RUN //' -e ':a' -e '/\\$/N; s/\\\n//; ta')
	[ -n "$script" ] || fail "no Obscura RUN instruction"
	script=${script//\/usr\/local\/bin\//$SCRATCH/bin/}
	version=$(sed -n 's/^ARG OBSCURA_VERSION=//p' "$C/Dockerfile")
	rm -f "$SCRATCH/bin/obscura" "$SCRATCH/curl.log"
	run env PATH="$SCRATCH/stubs:$SCRATCH/bin:$PATH" OBSCURA_VERSION="$version" OBSCURA_SHA256="${1:-}" \
		bash -euo pipefail -c "$script"
}

@test "Dockerfile: Obscura, a pinned release, installed only when sha256sum -c accepts it" {
	grep -q '^ARG OBSCURA_VERSION=v[0-9][0-9.]*$' "$C/Dockerfile"
	# No checksum is made up: the digest comes from a build argument or the release.
	grep -q '^ARG OBSCURA_SHA256=$' "$C/Dockerfile"
	obscura_setup
	# OBSCURA_SHA256 given and right: installed, the API not asked.
	obscura_run "$ASSET_SUM"
	assert_success
	assert_output --partial 'obscura-x86_64-linux.tar.gz: OK'
	[ -x "$SCRATCH/bin/obscura" ]
	[ -x "$SCRATCH/bin/obscura-worker" ]
	run grep -c api.github.com "$SCRATCH/curl.log"
	assert_output 0
	# Given and wrong, or not a digest: nothing installed.
	for bad in "$(printf '0%.0s' $(seq 64))" abc "$ASSET_SUM "; do
		obscura_run "$bad"
		assert_failure
		[ ! -e "$SCRATCH/bin/obscura" ]
	done
	# Not given: the digest GitHub publishes with the release asset.
	jq -n --arg d "sha256:$ASSET_SUM" '{assets: [{name: "obscura-x86_64-linux.tar.gz", digest: $d}]}' >"$SCRATCH/release.json"
	obscura_run
	assert_success
	[ -x "$SCRATCH/bin/obscura" ]
	grep -qx "https://api.github.com/repos/h4ckf0r0day/obscura/releases/tags/$(sed -n 's/^ARG OBSCURA_VERSION=//p' "$C/Dockerfile")" "$SCRATCH/curl.log"
	# A wrong digest, none for this asset, or no digest at all: never installed unverified.
	for json in "{\"assets\": [{\"name\": \"obscura-x86_64-linux.tar.gz\", \"digest\": \"sha256:$(printf 'f%.0s' $(seq 64))\"}]}" \
		"{\"assets\": [{\"name\": \"obscura-aarch64-linux.tar.gz\", \"digest\": \"sha256:$ASSET_SUM\"}]}" \
		'{"assets": [{"name": "obscura-x86_64-linux.tar.gz"}]}' \
		'{"assets": [{"name": "obscura-x86_64-linux.tar.gz", "digest": null}]}' 'not json'; do
		printf '%s\n' "$json" >"$SCRATCH/release.json"
		obscura_run
		assert_failure
		[ ! -e "$SCRATCH/bin/obscura" ] || fail "installed with $json"
	done
}

@test "Dockerfile: fallow with pnpm, its store outside the cache disk; /opt/forge 0777; the agents' note on forge-cache-prune" {
	grep -q -- 'pnpm add --global --store-dir /opt/forge/.local/share/pnpm/store fallow' "$C/Dockerfile"
	run grep -n -- '--store-dir /opt/forge/.cache' "$C/Dockerfile"
	assert_failure
	# Installed with the rest, before the cache variables point at the disk.
	local env_line fallow_line
	env_line=$(grep -n 'XDG_CACHE_HOME=' "$C/Dockerfile" | head -n 1 | cut -d: -f1)
	fallow_line=$(grep -n 'pnpm add --global' "$C/Dockerfile" | cut -d: -f1)
	[ "$fallow_line" -lt "$env_line" ]
	# The global bin dir the image puts on PATH is the one fallow went to.
	[ "$(env_value PNPM_HOME)" = /opt/forge/.local/share/pnpm ]
	grep -q 'export PNPM_HOME=/opt/forge/.local/share/pnpm' "$C/Dockerfile"
	grep -q 'export PATH="${PNPM_HOME}/bin:${PNPM_HOME}:${PATH}"' "$C/Dockerfile"
	[[ :$(env_value PATH): == *:/opt/forge/.local/share/pnpm/bin:* ]]
	grep -q 'useradd .*--home-dir /opt/forge' "$C/Dockerfile"
	grep -q '^ && chmod 0777 /opt/forge \\$' "$C/Dockerfile"
	grep -q '^COPY AGENTS.md /opt/forge/AGENTS.md$' "$C/Dockerfile"
	grep -q 'forge-cache-prune' "$C/AGENTS.md"
	grep -q 'obscura serve --port 9222' "$C/AGENTS.md"
}

# --- forge-dockerd-start ---------------------------------------------------

# stub_daemon: a `docker` that answers once $STUB_STATE/running exists and a
# `dockerd` that records each start and behaves as STUB_MODE says:
# ok (answers after 0.3 s), hang (logs 30 lines, never answers), die (exit 3).
stub_daemon() {
	cat >"$SCRATCH/stubs/docker" <<'EOF'
#!/bin/sh
[ -e "$STUB_STATE/running" ]
EOF
	cat >"$SCRATCH/stubs/dockerd" <<'EOF'
#!/bin/sh
echo "$$ $*" >>"$STUB_STATE/starts"
echo "$$" >>"$STUB_STATE/pids"
ls -l "/proc/$$/fd" >"$STUB_STATE/fds.$$" 2>&1
ps -o sid= -p "$$" | tr -d ' ' >"$STUB_STATE/sid.$$"
case ${STUB_MODE:-ok} in
ok) sleep 0.3; touch "$STUB_STATE/running"; echo "API listen"; exec sleep 300 ;;
hang) for i in $(seq 1 30); do echo "dockerd line $i"; done; exec sleep 300 ;;
die) echo "failed to start daemon: stub says no"; exit 3 ;;
esac
EOF
	chmod +x "$SCRATCH/stubs/docker" "$SCRATCH/stubs/dockerd"
	export PATH="$SCRATCH/stubs:$PATH"
	export FORGE_DOCKERD_LOCK="$SCRATCH/dockerd.lock" FORGE_DOCKERD_LOG="$SCRATCH/dockerd.log"
}

@test "forge-dockerd-start --help prints the usage on stdout" {
	run --separate-stderr "$C/forge-dockerd-start" --help
	assert_success
	[[ $output == 'Usage: forge-dockerd-start'* ]]
	[[ $output == *FORGE_DOCKERD_TIMEOUT* ]]
}

@test "forge-dockerd-start: no docker client or no dockerd: 69, naming it" {
	stub_daemon
	FORGE_DOCKER=$SCRATCH/none/docker run --separate-stderr "$C/forge-dockerd-start"
	assert_failure 69
	[[ $stderr == *"required program '$SCRATCH/none/docker' not found"* ]]
	FORGE_DOCKERD=$SCRATCH/none/dockerd run --separate-stderr "$C/forge-dockerd-start"
	assert_failure 69
	[[ $stderr == *"required program '$SCRATCH/none/dockerd' not found"* ]]
}

@test "forge-dockerd-start: exits 0 at once when docker info answers; dockerd never runs" {
	stub_daemon
	touch "$STUB_STATE/running"
	run "$C/forge-dockerd-start"
	assert_success
	assert_output ''
	[ ! -e "$STUB_STATE/starts" ]
	[ ! -e "$FORGE_DOCKERD_LOCK" ]
}

@test "forge-dockerd-start: three concurrent starts start exactly one daemon" {
	stub_daemon
	local i pids=''
	for i in 1 2 3; do
		"$C/forge-dockerd-start" >"$SCRATCH/out.$i" 2>&1 3>&- &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086 # a list of PIDs
	wait_each $pids
	[ "$(wc -l <"$STUB_STATE/starts")" -eq 1 ]
	run cat "$SCRATCH"/out.*
	[ "${#lines[@]}" -eq 1 ]
	assert_line --regexp '^forge-dockerd-start: started dockerd \(pid [0-9]+\), log in '
	# The daemon logs to the file, and a later call finds it running.
	grep -q 'API listen' "$FORGE_DOCKERD_LOG"
	run "$C/forge-dockerd-start"
	assert_success
	[ "$(wc -l <"$STUB_STATE/starts")" -eq 1 ]
}

@test "forge-dockerd-start: the daemon runs in its own session, without the lock fd, with our arguments" {
	stub_daemon
	run "$C/forge-dockerd-start" --data-root '/x y' --debug
	assert_success
	local pid
	read -r pid _ <"$STUB_STATE/starts"
	run cat "$STUB_STATE/starts"
	assert_output "$pid --data-root /x y --debug"
	[ "$(cat "$STUB_STATE/sid.$pid")" = "$pid" ]
	run grep -F "$FORGE_DOCKERD_LOCK" "$STUB_STATE/fds.$pid"
	assert_failure
	# The lock is free again: nothing the daemon holds keeps it.
	flock -n "$FORGE_DOCKERD_LOCK" true
}

@test "forge-dockerd-start: no answer in time: exit 1, the last 20 log lines, the daemon stopped" {
	stub_daemon
	export STUB_MODE=hang FORGE_DOCKERD_TIMEOUT=1
	run --separate-stderr "$C/forge-dockerd-start"
	assert_failure 1
	[[ $stderr == *'dockerd did not answer within 1 s; stopped it; the last 20 lines of '* ]]
	[[ $stderr == *$'\ndockerd line 11\n'*'dockerd line 30' ]]
	[[ $stderr != *$'\ndockerd line 10\n'* ]]
	local pid
	read -r pid _ <"$STUB_STATE/starts"
	for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	run kill -0 "$pid"
	assert_failure
}

@test "forge-dockerd-start: a daemon that exits fails at once, with its log; the old log is kept" {
	stub_daemon
	echo 'previous run' >"$FORGE_DOCKERD_LOG"
	export STUB_MODE=die FORGE_DOCKERD_TIMEOUT=30
	SECONDS=0
	run --separate-stderr "$C/forge-dockerd-start"
	assert_failure 1
	[ "$SECONDS" -lt 25 ] # not FORGE_DOCKERD_TIMEOUT's 30 s
	[[ $stderr == *'dockerd exited with status 3'* ]]
	[[ $stderr == *'failed to start daemon: stub says no'* ]]
	[ "$(cat "$FORGE_DOCKERD_LOG.1")" = 'previous run' ]
}

@test "forge-dockerd-start: not root, it re-executes itself with sudo -n" {
	command -v setpriv >/dev/null || skip "setpriv (util-linux) not installed"
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch to an unprivileged user"
	stub_daemon
	cat >"$SCRATCH/stubs/sudo" <<'EOF'
#!/bin/sh
printf '%s\n' "$(id -u)" "$@" >"$STUB_STATE/sudo.argv"
EOF
	chmod 0755 "$SCRATCH/stubs/sudo"
	chmod 0755 "$SCRATCH" "$SCRATCH/stubs"
	chmod 0777 "$STUB_STATE"
	run setpriv --reuid=65534 --regid=65534 --clear-groups \
		env PATH="$PATH" STUB_STATE="$STUB_STATE" "$C/forge-dockerd-start" --debug
	assert_success
	run cat "$STUB_STATE/sudo.argv"
	assert_output "65534
-n
--
$C/forge-dockerd-start
--debug"
	[ ! -e "$STUB_STATE/starts" ]
}

@test "forge-dockerd-start: the real dockerd, a private instance: one start of three, then it answers" {
	command -v dockerd >/dev/null || unavailable "no dockerd (apt-get install docker.io)"
	command -v docker >/dev/null || unavailable "no docker client (apt-get install docker.io)"
	[ "$(id -u)" -eq 0 ] || unavailable "starting dockerd needs root"
	command -v unshare >/dev/null || unavailable "no unshare (util-linux)"
	local d=$SCRATCH/d i
	docker_lock
	mkdir -p "$d"
	# A client for the private socket; the daemon: its own socket, data,
	# runtime folder and pid file, no iptables, and its own network
	# namespace (unshare execs dockerd, keeping the pid): it cannot touch a
	# system daemon that may be running (dockerd --bridge none deletes the
	# host's docker0 when it shares its network namespace).
	printf '#!/bin/sh\nexec docker -H "unix://%s/docker.sock" "$@"\n' "$d" >"$SCRATCH/private-docker"
	printf '#!/bin/sh\nexec unshare --net -- dockerd "$@"\n' >"$SCRATCH/private-dockerd"
	chmod +x "$SCRATCH/private-docker" "$SCRATCH/private-dockerd"
	export FORGE_DOCKER=$SCRATCH/private-docker FORGE_DOCKERD=$SCRATCH/private-dockerd
	export FORGE_DOCKERD_LOCK=$d/lock FORGE_DOCKERD_LOG=$d/log
	set -- -H "unix://$d/docker.sock" --data-root "$d/data" --exec-root "$d/exec" \
		--pidfile "$SCRATCH/dockerd.pid" --bridge none --iptables=false --ip-masq=false
	run "$FORGE_DOCKER" info
	assert_failure
	pids=''
	for i in 1 2 3; do
		"$C/forge-dockerd-start" "$@" >"$SCRATCH/out.$i" 2>&1 3>&- &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086 # a list of PIDs
	wait_each $pids || { cat "$SCRATCH"/out.* "$d/log" >&2; false; }
	run "$FORGE_DOCKER" info --format '{{.DockerRootDir}}'
	assert_success
	assert_output "$d/data"
	run pgrep -x -f -- "dockerd $*"
	[ "${#lines[@]}" -eq 1 ]
	[ "$(cat "$SCRATCH/dockerd.pid")" = "${lines[0]}" ]
	run cat "$SCRATCH"/out.*
	[ "${#lines[@]}" -eq 1 ]
	assert_line --partial 'started dockerd'
	# Idempotent: a fourth call starts nothing.
	run "$C/forge-dockerd-start" "$@"
	assert_success
	assert_output ''
}

# --- forge-cache-prune -----------------------------------------------------

# cache_tree DIR: a synthetic cache with every entry SPEC 7 names, unknown
# entries, and symbolic links pointing out of it.
cache_tree() {
	local c=$1
	mkdir -p "$c"/pnpm/store/v3/files/00 "$c"/npm/_cacache "$c"/uv/archive-v0 \
		"$c"/cargo/registry/cache "$c"/cargo/git/db "$c"/cargo/bin \
		"$c"/go/pkg/mod/example.com/m@v1.0.0 "$c"/go/pkg/sumdb "$c"/go/bin \
		"$c"/rustup/toolchains/stable "$c"/uv-python/cpython-3.12 "$c"/uv-tools/ruff \
		"$c"/uv-bin "$c"/pip/http "$c"/go-build/00 "$c"/.bun/install/cache \
		"$c/odd name"$'\n'"line"
	head -c 40000 /dev/zero >"$c"/pnpm/store/v3/files/00/blob
	echo npm >"$c"/npm/_cacache/index
	echo uv >"$c"/uv/archive-v0/wheel
	echo crate >"$c"/cargo/registry/cache/serde.crate
	echo git >"$c"/cargo/git/db/pack
	echo rg >"$c"/cargo/bin/rg
	echo '[v1]' >"$c"/cargo/.crates.toml
	echo mod >"$c"/go/pkg/mod/example.com/m@v1.0.0/m.go
	echo sum >"$c"/go/pkg/sumdb/latest
	echo gopls >"$c"/go/bin/gopls
	echo rustc >"$c"/rustup/toolchains/stable/rustc
	echo py >"$c"/uv-python/cpython-3.12/python
	echo ruff >"$c"/uv-tools/ruff/ruff
	echo ruff >"$c"/uv-bin/ruff
	echo pip >"$c"/pip/http/x
	echo obj >"$c"/go-build/00/obj
	echo bun >"$c"/.bun/install/cache/x
	echo stray >"$c"/stray-file
	echo odd >"$c/odd name"$'\n'"line/f"
	# Go makes its module cache read-only.
	chmod -R a-w "$c"/go/pkg/mod
	# Links out of the cache: an unknown top-level one, one inside a
	# cleared tree, and one in place of a cleared subfolder.
	mkdir -p "$SCRATCH"/outside/a "$SCRATCH"/outside/b "$SCRATCH"/outside/c
	echo precious >"$SCRATCH"/outside/a/keep
	echo precious >"$SCRATCH"/outside/b/keep
	echo precious >"$SCRATCH"/outside/c/keep
	ln -s "$SCRATCH"/outside/a "$c"/link-out
	ln -s "$SCRATCH"/outside/b "$c"/npm/escape
	rm -rf "$c"/cargo/git
	ln -s "$SCRATCH"/outside/c "$c"/cargo/git
	# A link among the kept toolchains stays as it is.
	ln -s "$SCRATCH"/outside/a "$c"/uv-bin/linked-tool
}

# stub_root_tools CODE: apt-get and fstrim stubs that log and exit CODE.
stub_root_tools() {
	local t
	for t in apt-get fstrim; do
		printf '#!/bin/sh\necho "%s $*" >>"%s/root-tools"\necho "%s: stub failure" >&2\nexit %s\n' \
			"$t" "$STUB_STATE" "$t" "$1" >"$SCRATCH/stubs/$t"
		chmod 0755 "$SCRATCH/stubs/$t"
	done
	export PATH="$SCRATCH/stubs:$PATH"
}

# survivors: what must be left of cache_tree's cache.
survivors() {
	printf '%s\n' . ./cargo ./cargo/.crates.toml ./cargo/bin ./cargo/bin/rg \
		./go ./go/bin ./go/bin/gopls ./go/pkg ./go/pkg/sumdb ./go/pkg/sumdb/latest \
		./rustup ./rustup/toolchains ./rustup/toolchains/stable ./rustup/toolchains/stable/rustc \
		./uv-bin ./uv-bin/linked-tool ./uv-bin/ruff ./uv-python ./uv-python/cpython-3.12 \
		./uv-python/cpython-3.12/python ./uv-tools ./uv-tools/ruff ./uv-tools/ruff/ruff |
		LC_ALL=C sort
}
# outside_intact: every target of the links is as it was.
outside_intact() {
	[ "$(cat "$SCRATCH"/outside/a/keep "$SCRATCH"/outside/b/keep "$SCRATCH"/outside/c/keep)" = \
		"$(printf 'precious\nprecious\nprecious')" ]
}

@test "forge-cache-prune: clears the caches, keeps the toolchains, never follows a link out" {
	export XDG_CACHE_HOME=$SCRATCH/cache
	cache_tree "$XDG_CACHE_HOME"
	stub_root_tools 0
	run --separate-stderr "$C/forge-cache-prune"
	assert_success
	[ -z "$stderr" ]
	local found
	found=$(cd "$XDG_CACHE_HOME" && find . | LC_ALL=C sort)
	[ "$found" = "$(survivors)" ] || { diff <(echo "$found") <(survivors) >&2; false; }
	outside_intact
	[ -L "$XDG_CACHE_HOME/uv-bin/linked-tool" ]
	# What it freed: one "BYTES<TAB>ENTRY" line per cleared entry, then the total.
	local name sum=0 bytes
	for name in .bun cargo/registry cargo/git go-build go/pkg/mod link-out npm 'odd name' \
		pip pnpm stray-file uv; do
		assert_line --regexp "^[0-9]+"$'\t'"$name"
	done
	[ "${#lines[@]}" -eq 14 ] # 12 entries, the odd name's second line, the total
	assert_line --regexp $'^0\tlink-out$'
	assert_line --regexp $'^0\tcargo/git$'
	bytes=$(printf '%s\n' "$output" | sed -n 's/\tpnpm$//p')
	[ "$bytes" -ge 40000 ]
	for bytes in $(printf '%s\n' "$output" | grep -v $'\ttotal$' | cut -f1 | grep -E '^[0-9]+$'); do
		sum=$((sum + bytes))
	done
	assert_line "$sum"$'\ttotal'
	[ "${lines[-1]}" = "$sum"$'\ttotal' ]
	# Then apt-get clean and fstrim on the cache's filesystem.
	run cat "$STUB_STATE/root-tools"
	assert_output "apt-get clean
fstrim -- $XDG_CACHE_HOME"
}

@test "forge-cache-prune: apt-get and fstrim failures are warnings" {
	export XDG_CACHE_HOME=$SCRATCH/cache
	mkdir -p "$XDG_CACHE_HOME/npm"
	stub_root_tools 1
	run --separate-stderr "$C/forge-cache-prune"
	assert_success
	[[ $stderr == *"forge-cache-prune: warning: 'apt-get clean' failed: apt-get: stub failure"* ]]
	[[ $stderr == *"forge-cache-prune: warning: 'fstrim -- $XDG_CACHE_HOME' failed: fstrim: stub failure"* ]]
	[ ! -e "$XDG_CACHE_HOME/npm" ]
	assert_line --regexp $'^[0-9]+\ttotal$'
}

@test "forge-cache-prune: cargo or go that are links are not descended into" {
	export XDG_CACHE_HOME=$SCRATCH/cache
	mkdir -p "$XDG_CACHE_HOME" "$SCRATCH"/elsewhere/cargo/registry "$SCRATCH"/elsewhere/go/pkg/mod
	echo keep >"$SCRATCH"/elsewhere/cargo/registry/x
	echo keep >"$SCRATCH"/elsewhere/go/pkg/mod/x
	ln -s "$SCRATCH"/elsewhere/cargo "$XDG_CACHE_HOME"/cargo
	ln -s "$SCRATCH"/elsewhere/go "$XDG_CACHE_HOME"/go
	stub_root_tools 0
	run --separate-stderr "$C/forge-cache-prune"
	assert_success
	[[ $stderr == *'warning: cargo is a symbolic link: not descending into it'* ]]
	[[ $stderr == *'warning: go is a symbolic link: not descending into it'* ]]
	[ -f "$SCRATCH"/elsewhere/cargo/registry/x ]
	[ -f "$SCRATCH"/elsewhere/go/pkg/mod/x ]
	[ -L "$XDG_CACHE_HOME"/cargo ]
	[ -L "$XDG_CACHE_HOME"/go ]
	assert_output $'0\ttotal'
}

@test "forge-cache-prune: a go/pkg that is a link is not descended into either" {
	export XDG_CACHE_HOME=$SCRATCH/cache
	mkdir -p "$XDG_CACHE_HOME"/go "$SCRATCH"/elsewhere/mod
	echo keep >"$SCRATCH"/elsewhere/mod/x
	ln -s "$SCRATCH"/elsewhere "$XDG_CACHE_HOME"/go/pkg
	stub_root_tools 0
	run --separate-stderr "$C/forge-cache-prune"
	assert_success
	[[ $stderr == *'warning: go/pkg is a symbolic link: not descending into it'* ]]
	[ -f "$SCRATCH"/elsewhere/mod/x ]
}

@test "forge-cache-prune: refuses / and \$HOME and a relative XDG_CACHE_HOME; no cache is nothing to do" {
	stub_root_tools 0
	echo keep >"$HOME/file"
	XDG_CACHE_HOME=$HOME run --separate-stderr "$C/forge-cache-prune"
	assert_failure 65
	[[ $stderr == *'refusing to prune'* ]]
	[ -f "$HOME/file" ]
	ln -s / "$SCRATCH/root-link"
	XDG_CACHE_HOME=$SCRATCH/root-link run --separate-stderr "$C/forge-cache-prune"
	assert_failure 65
	XDG_CACHE_HOME=relative/cache run --separate-stderr "$C/forge-cache-prune"
	assert_failure 65
	XDG_CACHE_HOME=$SCRATCH/none run --separate-stderr "$C/forge-cache-prune"
	assert_success
	assert_output $'0\ttotal'
	run "$C/forge-cache-prune" --bogus
	assert_failure 64
	run --separate-stderr "$C/forge-cache-prune" --help
	assert_success
	[[ $output == 'Usage: forge-cache-prune'* ]]
}

@test "forge-cache-prune: as an unprivileged user it empties Go's read-only module cache" {
	command -v setpriv >/dev/null || skip "setpriv (util-linux) not installed"
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch to an unprivileged user"
	local c=$SCRATCH/cache
	cache_tree "$c"
	stub_root_tools 0
	chmod 0755 "$SCRATCH" "$SCRATCH/stubs"
	chown -R 65534:65534 "$c" "$STUB_STATE"
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
		env PATH="$PATH" HOME=/nonexistent XDG_CACHE_HOME="$c" "$C/forge-cache-prune"
	assert_success
	[ ! -e "$c/go/pkg/mod" ]
	[ "$(cd "$c" && find . | LC_ALL=C sort)" = "$(survivors)" ]
	outside_intact
}
