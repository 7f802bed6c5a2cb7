# Shared by t/container.bats and t/build-image.bats: finding (or starting) a
# real Docker daemon, finding the real msb, and a tiny local base image,
# since no image can be pulled here.
# shellcheck shell=bash
# shellcheck disable=SC2154 # abs_top_srcdir and SCRATCH come from forge_test_setup

# unavailable REASON: skip the test; under CI=true (where .ci/run installs
# everything) fail instead, so a missing dependency never passes silently.
unavailable() {
	[ "${CI:-}" != true ] || fail "$1 (required when CI=true)"
	skip "$1"
}

# docker_lock: one test at a time, across test files, uses a real Docker
# daemon (make check runs two files at once, and a Docker test beside
# another has failed: a build lost its base image's /bin/sh, an export
# gave 69). A folder made with mkdir (no descriptor a daemon could
# inherit), holding the test process's PID; a holder that is gone is
# replaced. docker_unlock (every teardown of these files) releases it.
FORGE_TEST_DOCKER_LOCK=/tmp/forge-test-docker.lock
docker_lock() {
	local holder _
	for _ in $(seq 1200); do
		if mkdir "$FORGE_TEST_DOCKER_LOCK" 2>/dev/null; then
			echo "$BASHPID" >"$FORGE_TEST_DOCKER_LOCK/pid"
			return 0
		fi
		holder=$(cat "$FORGE_TEST_DOCKER_LOCK/pid" 2>/dev/null) || holder=
		if [ -n "$holder" ] && ! kill -0 "$holder" 2>/dev/null; then
			rm -rf "$FORGE_TEST_DOCKER_LOCK"
			continue
		fi
		sleep 0.5
	done
	fail "another test has held $FORGE_TEST_DOCKER_LOCK for 10 minutes"
}

docker_unlock() {
	[ "$(cat "$FORGE_TEST_DOCKER_LOCK/pid" 2>/dev/null)" != "$BASHPID" ] || rm -rf "$FORGE_TEST_DOCKER_LOCK"
}

# docker_up: a real Docker daemon answers, started with forge-dockerd-start
# (the script under test, default paths, as root) when it did not. Takes
# docker_lock first.
docker_up() {
	docker_lock
	command -v docker >/dev/null || unavailable "no docker client (apt-get install docker.io)"
	docker info >/dev/null 2>&1 && return 0
	command -v dockerd >/dev/null || unavailable "no dockerd (apt-get install docker.io)"
	[ "$(id -u)" -eq 0 ] || unavailable "the Docker daemon is not running, and starting it needs root"
	local out
	# 3>&-: bats' own descriptor must not reach the daemon.
	out=$("$abs_top_srcdir/container/forge-dockerd-start" 2>&1 3>&-) ||
		unavailable "forge-dockerd-start could not start dockerd: $out"
	docker info >/dev/null 2>&1 || fail "forge-dockerd-start exited 0 but docker info does not answer"
}

# msb_up: sets FORGE_MSB to the real msb (FORGE_MSB, the CI install, or PATH)
# with a private MSB_HOME.
msb_up() {
	local msb=${FORGE_MSB:-/opt/forge-msb/node_modules/@superradcompany/microsandbox-linux-x64-gnu/bin/msb}
	[ -x "$msb" ] || msb=$(command -v msb) || unavailable "no msb (build-aux/install-deps installs it)"
	export FORGE_MSB=$msb MSB_HOME="$SCRATCH/msb-home"
}

# make_rootfs DIR: a busybox root filesystem (the busybox binary, the shared
# libraries it needs if it is not the static one, and applet links).
make_rootfs() {
	local bb lib
	bb=$(command -v busybox) || unavailable "no busybox (apt-get install busybox-static)"
	mkdir -p "$1/bin" "$1/tmp" "$1/etc"
	cp "$bb" "$1/bin/busybox"
	for lib in $(ldd "$bb" 2>/dev/null | grep -o '/[^ ]*' || :); do
		mkdir -p "$1${lib%/*}"
		cp -L "$lib" "$1$lib"
	done
	for a in sh echo sleep cat true false mkdir ls rm touch env; do
		ln -s busybox "$1/bin/$a"
	done
}

# base_image: forge-test-base:latest, imported once from a busybox rootfs.
base_image() {
	docker image inspect forge-test-base:latest >/dev/null 2>&1 && return 0
	make_rootfs "$SCRATCH/rootfs"
	tar -C "$SCRATCH/rootfs" -c . | docker import - forge-test-base:latest >/dev/null
}
