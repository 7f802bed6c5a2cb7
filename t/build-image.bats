#!/usr/bin/env bats
# forge-sandbox build-image (forge_image_build, lib-sh/forge-image.sh):
# docker build, docker save, msb load, the tar always removed, progress,
# one build at a time (SPEC section 4.1). For real against Docker and msb
# (a busybox base image made here, since nothing can be pulled), and with
# stubs for what only a stub can make happen.
load test_helper
load container-fixtures/docker
setup() {
	load_support
	forge_test_setup
	# The lock then lives in this test's TMPDIR.
	unset XDG_RUNTIME_DIR FORGE_DATADIR
	LOCK=$TMPDIR/forge-build-image-$(id -u).lock
	STUB_STATE=$SCRATCH/state
	mkdir -p "$STUB_STATE" "$SCRATCH/stubs"
	export STUB_STATE
	TAGS=()
	# forge-sandbox build-image as a file, for setsid, perl and script(1).
	printf '#!/bin/sh\nexec "%s/bin/forge-sandbox" build-image "$@"\n' \
		"$abs_top_builddir" >"$SCRATCH/build-image"
	chmod +x "$SCRATCH/build-image"
}
teardown() {
	local t
	for t in "${TAGS[@]}"; do docker rmi -f "$t" >/dev/null 2>&1 || :; done
	# The legacy builder keeps the container of a failed step.
	if [ -n "${REAL:-}" ]; then
		docker ps -aq --filter ancestor=forge-test-base:latest --filter status=exited \
			--filter status=created | xargs -r docker rm -f >/dev/null 2>&1 || :
	fi
	docker_unlock
	forge_test_teardown
}

build_image() { "$SCRATCH/build-image" "$@"; }

# build_image_ok ARGS...: build_image for a build that must succeed, made
# once more when Docker itself lost a layer's /bin/sh mid-build ("stat
# /bin/sh: no such file or directory" from runc, after earlier RUN steps of
# the same build ran): a storage race of the daemon's, seen in CI under
# load, not something forge did. Any other failure is the test's.
build_image_ok() {
	local rc=0
	"$SCRATCH/build-image" "$@" 2>"$SCRATCH/build-image.err" || rc=$?
	if [ "$rc" -ne 0 ] && grep -q 'stat /bin/sh: no such file or directory' "$SCRATCH/build-image.err"; then
		printf '# Docker lost /bin/sh mid-build; built again\n' >&2
		rc=0
		"$SCRATCH/build-image" "$@" 2>"$SCRATCH/build-image.err" || rc=$?
	fi
	cat "$SCRATCH/build-image.err" >&2
	return "$rc"
}

# build_image_fails ARGS...: build_image for a build that must fail in its
# own step, made once more on the same storage race of Docker's as
# build_image_ok (its failure would then be Docker's, not the step's);
# only the last attempt's standard error is passed on.
build_image_fails() {
	local rc=0
	"$SCRATCH/build-image" "$@" 2>"$SCRATCH/build-image.err" || rc=$?
	if [ "$rc" -ne 0 ] && grep -q 'stat /bin/sh: no such file or directory' "$SCRATCH/build-image.err"; then
		rc=0
		"$SCRATCH/build-image" "$@" 2>"$SCRATCH/build-image.err" || rc=$?
	fi
	cat "$SCRATCH/build-image.err" >&2
	return "$rc"
}

# no_leftovers: nothing of a build is left in TMPDIR (no tar, no folder) and
# the lock is free.
no_leftovers() {
	local left
	left=$(find "$TMPDIR" -mindepth 1 ! -name "${LOCK##*/}")
	[ -z "$left" ] || fail "left in TMPDIR: $left"
	flock -n "$LOCK" true || fail "the build lock is still held"
}

# wait_for FILE PATTERN: up to 20 s for FILE to contain PATTERN.
wait_for() {
	local i
	for i in $(seq 1 200); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "timed out waiting for '$2' in $1: $(cat "$1" 2>/dev/null)"
}

# wait_gone PATH...: up to 10 s for every PATH to disappear (the interrupted
# build's cleanup may finish just after its caller died of the signal).
wait_gone() {
	local i p gone
	for i in $(seq 1 100); do
		gone=1
		for p in "$@"; do [ ! -e "$p" ] || gone=0; done
		[ "$gone" = 0 ] || return 0
		sleep 0.1
	done
}

# --- for real: Docker and msb ----------------------------------------------

# real_setup: a running Docker daemon (started by forge-dockerd-start when
# needed), the real msb with a private store, the busybox base image.
real_setup() {
	REAL=1
	docker_up
	msb_up
	base_image
}

# make_context DIR RUN...: a build context FROM the base image with one RUN
# per argument, plus a unique first step so that Docker's cache never
# short-cuts the build.
make_context() {
	local dir=$1 step
	shift
	mkdir -p "$dir"
	{
		echo 'FROM forge-test-base:latest'
		echo "RUN echo 'nonce $BATS_TEST_NUMBER $$ $RANDOM$RANDOM' >/nonce"
		for step in "$@"; do echo "RUN $step"; done
	} >"$dir/Dockerfile"
}

# msb_digest REF: the digest of REF in msb's image store.
msb_digest() {
	"$FORGE_MSB" images --format json | jq -r --arg r "$1" '.[] | select(.reference == $r) | .digest'
}

# msb_has REF: msb's image store lists REF.
msb_has() {
	local refs
	refs=$("$FORGE_MSB" images --format json | jq -r '.[].reference') || fail "msb images failed"
	grep -qxF -- "$1" <<<"$refs"
}

@test "build-image for real: docker build, docker save, msb load; msb lists the tag; no tar left" {
	real_setup
	make_context "$SCRATCH/ctx" 'echo hello from the build >/built' 'cat /built'
	TAGS+=(forge-test:1)
	run --separate-stderr build_image_ok --tag forge-test:1 --context "$SCRATCH/ctx"
	[ "$status" -eq 0 ] || fail "build-image failed: $stderr"
	assert_output forge-test:1
	msb_has forge-test:1
	run "$FORGE_MSB" images --format json
	[ "$(jq -r '.[] | select(.reference == "forge-test:1") | .size_bytes > 0' <<<"$output")" = true ]
	# The image is what the context built.
	run docker run --rm --network none forge-test:1 cat /built
	assert_output 'hello from the build'
	no_leftovers
	# Building the tag again replaces the image msb has under it.
	local before after
	before=$(msb_digest forge-test:1)
	make_context "$SCRATCH/ctx" 'echo rebuilt >/built'
	run build_image --tag forge-test:1 --context "$SCRATCH/ctx"
	assert_success
	after=$(msb_digest forge-test:1)
	[ -n "$before" ]
	[ -n "$after" ]
	[ "$before" != "$after" ]
	run docker run --rm --network none forge-test:1 cat /built
	assert_output rebuilt
	no_leftovers
}

@test "build-image for real, not on a terminal: timestamped lines naming each Docker step" {
	real_setup
	make_context "$SCRATCH/ctx" 'echo one' 'echo two'
	TAGS+=(forge-test:plain)
	run --separate-stderr build_image_ok --tag forge-test:plain --context "$SCRATCH/ctx"
	# (What build-image said, should it fail: it failed once in CI with no output.)
	[ "$status" -eq 0 ] || printf 'stderr: %s\n' "$stderr"
	assert_success
	local ts='forge-sandbox: [0-9]{2}:[0-9]{2}:[0-9]{2} \+[0-9]+:[0-9]{2}'
	output=$stderr lines=("${stderr_lines[@]}")
	assert_line --regexp "^$ts docker build -t forge-test:plain $SCRATCH/ctx\$"
	assert_line --regexp "^$ts \\[1/4\\] FROM .*forge-test-base:latest\$"
	assert_line --regexp "^$ts \\[3/4\\] RUN echo one\$"
	assert_line --regexp "^$ts \\[4/4\\] RUN echo two\$"
	assert_line --regexp "^$ts docker save forge-test:plain\$"
	assert_line --regexp "^$ts msb load --tag forge-test:plain\$"
	assert_line --regexp '^forge-sandbox: built forge-test:plain and loaded it into msb in [0-9]+:[0-9]{2}$'
	[[ $stderr != *$'\r'* ]]
	no_leftovers
}

@test "build-image for real, on a terminal: one line updated in place with the elapsed time and the step" {
	command -v script >/dev/null || unavailable "no script(1) (util-linux)"
	real_setup
	make_context "$SCRATCH/ctx" 'sleep 2' 'echo done'
	TAGS+=(forge-test:tty)
	# script(1) needs an open stdin (CI may have none).
	TERM=xterm run script -qec "$SCRATCH/build-image --tag forge-test:tty --context $SCRATCH/ctx" /dev/null </dev/null
	assert_success
	# The elapsed time as M:SS, whatever the load makes it.
	[[ $output == *$'\rforge-sandbox: '[0-9]*:[0-5][0-9]' [1/4] FROM '* ]]
	[[ $output == *$'\rforge-sandbox: '[0-9]*:[0-5][0-9]' [3/4] RUN sleep 2'$'\e[K'* ]]
	[[ $output == *$'\rforge-sandbox: '[0-9]*:[0-5][0-9]' msb load --tag forge-test:tty'$'\e[K'* ]]
	[[ $output == *$'\r\e[Kforge-sandbox: built forge-test:tty and loaded it into msb in '* ]]
	# No timestamped lines on a terminal.
	[[ ! $output =~ forge-sandbox:\ [0-9]{2}:[0-9]{2}:[0-9]{2} ]]
	no_leftovers
}

@test "build-image for real: a failing build exits 1 with the last 20 lines of Docker's output" {
	real_setup
	make_context "$SCRATCH/ctx" 'i=0; while [ $i -lt 30 ]; do i=$((i + 1)); echo "out $i"; done; exit 7'
	run --separate-stderr build_image_fails --tag forge-test:fail --context "$SCRATCH/ctx"
	assert_failure 1
	[[ $stderr == *'forge-sandbox: error: docker build failed (exit '[1-9]*'); the last 20 lines of its output:'* ]]
	[[ $stderr == *'out 30'* ]] || fail "no 'out 30' in what build-image said: $stderr"
	[[ $stderr != *'out 5'$'\n'* ]]
	[ "$(grep -c '' <<<"${stderr#*the last 20 lines of its output:$'\n'}")" -eq 20 ]
	run ! msb_has forge-test:fail
	no_leftovers
}

@test "build-image for real: a second build while one runs is refused with 75; the first completes" {
	real_setup
	make_context "$SCRATCH/slow" 'sleep 3'
	make_context "$SCRATCH/quick" 'echo quick'
	TAGS+=(forge-test:slow forge-test:quick)
	build_image --tag forge-test:slow --context "$SCRATCH/slow" >"$SCRATCH/slow.out" 2>"$SCRATCH/slow.err" 3>&- &
	local slow=$!
	wait_for "$SCRATCH/slow.err" 'RUN sleep 3'
	run --separate-stderr build_image --tag forge-test:quick --context "$SCRATCH/quick"
	assert_failure 75
	[[ $stderr == "forge-sandbox: error: another build-image is running (it holds $LOCK); try again when it is done" ]]
	wait "$slow" || fail "the first build failed: $(cat "$SCRATCH/slow.err")"
	[ "$(cat "$SCRATCH/slow.out")" = forge-test:slow ]
	# The lock is released with the build.
	run build_image --tag forge-test:quick --context "$SCRATCH/quick"
	assert_success
	msb_has forge-test:slow
	msb_has forge-test:quick
	no_leftovers
}

@test "build-image for real: TERM during the build stops it and leaves nothing" {
	real_setup
	make_context "$SCRATCH/ctx" 'sleep 30'
	TAGS+=(forge-test:term)
	setsid "$SCRATCH/build-image" --tag forge-test:term --context "$SCRATCH/ctx" \
		>"$SCRATCH/out" 2>"$SCRATCH/err" 3>&- &
	local pid=$! status=0
	wait_for "$SCRATCH/err" 'RUN sleep 30'
	SECONDS=0
	kill -TERM -- "-$pid"
	wait "$pid" || status=$?
	[ "$status" -eq 143 ]
	wait_gone "$TMPDIR"/forge-build-image.*
	[ "$SECONDS" -lt 25 ] # not the RUN's 30 s
	no_leftovers
	run pgrep -f 'docker build -t forge-test:term'
	assert_failure
	! msb_has forge-test:term
}

@test "container/Dockerfile is accepted by the real Docker up to its first RUN" {
	# Its sources (Ubuntu, Docker's and NodeSource's repositories) are out of
	# reach, so it cannot be built here; on the busybox base, which has no
	# bash, Docker parses every instruction and fails at the first RUN.
	REAL=1
	docker_up
	base_image
	run docker build --build-arg BASE_IMAGE=forge-test-base:latest "$abs_top_srcdir/container"
	assert_failure
	[[ $output == *'RUN apt-get update'* ]]
	[[ $output == *'/bin/bash'* ]]
	[[ $output != *'parse error'* ]]
	[[ $output != *'unknown instruction'* ]]
	[[ $output != *'buildx component is missing'* ]]
}

# --- with stubs --------------------------------------------------------------

# stub_tools: docker and msb stand-ins that log their argv (and docker its
# BUILDKIT_PROGRESS); STUB_* variables make them fail or wait.
stub_tools() {
	cat >"$SCRATCH/stubs/docker" <<'EOF'
#!/bin/sh
printf '%s\n' "$*" >>"$STUB_STATE/docker.argv"
case $1 in
info)
	[ -z "${STUB_INFO_FAIL:-}" ] || {
		echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2
		exit 1
	}
	echo 'Server: stub' ;;
build)
	echo "BUILDKIT_PROGRESS=${BUILDKIT_PROGRESS:-}" >"$STUB_STATE/docker.env"
	[ -z "${STUB_BUILD_OUTPUT:-}" ] || cat "$STUB_BUILD_OUTPUT"
	exit "${STUB_BUILD_EXIT:-0}" ;;
save)
	[ -z "${STUB_SAVE_FAIL:-}" ] || { seq 1 30 | sed 's/^/save line /'; [ -z "${STUB_SAVE_ESC:-}" ] || printf 'Verdict: PASS\033[8m\n'; exit 1; }
	[ "$3" = -o ] && echo "the image $2" >"$4" ;;
esac
EOF
	cat >"$SCRATCH/stubs/msb" <<'EOF'
#!/bin/sh
printf '%s\n' "$*" >>"$STUB_STATE/msb.argv"
[ ! -f "$3" ] || echo "$3" >"$STUB_STATE/msb.saw-tar"
[ -z "${STUB_MSB_SLEEP:-}" ] || exec sleep "$STUB_MSB_SLEEP"
[ -z "${STUB_MSB_FAIL:-}" ] || { echo 'error: cache error: stub load failure' >&2; exit 1; }
EOF
	chmod +x "$SCRATCH/stubs/docker" "$SCRATCH/stubs/msb"
	export PATH="$SCRATCH/stubs:$PATH"
	unset FORGE_MSB
	mkdir -p "$SCRATCH/ctx"
	echo 'FROM scratch' >"$SCRATCH/ctx/Dockerfile"
}

# path_without DIR TOOL...: a PATH of links to the usual tools minus TOOL...
path_without() {
	local dir=$1 t
	shift
	mkdir -p "$dir"
	for t in sh bash dash grep sed awk jq git flock id date mktemp mkfifo rm mv cat tail head \
		stty sleep tr cut dirname basename readlink realpath sha256sum env ls find sort; do
		case " $* " in *" $t "*) continue ;; esac
		command -v "$t" >/dev/null && ln -sf "$(command -v "$t")" "$dir/$t"
	done
	printf '%s\n' "$abs_top_builddir/bin:$abs_top_builddir/helpers:$dir"
}

@test "build-image: the argv of docker build, docker save and msb load; the tar exists only meanwhile" {
	stub_tools
	run --separate-stderr build_image --tag 'reg.example:5000/team/img:v1.2' --context "$SCRATCH/ctx"
	assert_success
	assert_output 'reg.example:5000/team/img:v1.2'
	local tar
	tar=$(cat "$STUB_STATE/msb.saw-tar")
	[[ $tar == "$TMPDIR"/forge-build-image.*/image.tar ]]
	run cat "$STUB_STATE/docker.argv"
	assert_output "info
build -t reg.example:5000/team/img:v1.2 $SCRATCH/ctx
save reg.example:5000/team/img:v1.2 -o $tar"
	run cat "$STUB_STATE/msb.argv"
	assert_output "load --input $tar --tag reg.example:5000/team/img:v1.2 --quiet"
	run cat "$STUB_STATE/docker.env"
	assert_output 'BUILDKIT_PROGRESS=plain'
	[ ! -e "$tar" ]
	no_leftovers
}

@test "build-image: REF defaults to sandbox.image, DIR to <pkgdatadir>/container" {
	stub_tools
	export FORGE_DATADIR=$SCRATCH/data
	mkdir -p "$FORGE_DATADIR/container"
	echo 'FROM scratch' >"$FORGE_DATADIR/container/Dockerfile"
	run --separate-stderr build_image
	assert_success
	assert_output oc-forge-sandbox:latest
	grep -qx "build -t oc-forge-sandbox:latest $FORGE_DATADIR/container" "$STUB_STATE/docker.argv"
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo '{"sandbox": {"image": "my-sandbox:7"}}' >"$XDG_CONFIG_HOME/forge/config.json"
	run --separate-stderr build_image
	assert_success
	assert_output my-sandbox:7
	grep -qx "load --input .* --tag my-sandbox:7 --quiet" "$STUB_STATE/msb.argv"
	# Inside a repository, its forge.json cannot name the image (SPEC 6: it
	# would tag over an image of the user's choosing); the user's file counts.
	make_repo "$SCRATCH/repo"
	mkdir "$SCRATCH/repo/sub"
	echo '{"sandbox": {"image": "repo-sandbox:3"}}' >"$SCRATCH/repo/forge.json"
	run --separate-stderr sh -c 'cd "$1" && "$2"' - "$SCRATCH/repo/sub" "$SCRATCH/build-image"
	assert_success
	assert_output my-sandbox:7
	[[ $stderr == *"key sandbox.image is ignored in a repository's forge.json"* ]]
	# An installation without its container files: 69.
	rm "$FORGE_DATADIR/container/Dockerfile"
	run --separate-stderr build_image
	assert_failure 69
	[[ $stderr == *"no Dockerfile in $FORGE_DATADIR/container"* ]]
	# A sandbox.image that is no image reference: 65, naming the key.
	echo '{"sandbox": {"image": "-rm"}}' >"$XDG_CONFIG_HOME/forge/config.json"
	run --separate-stderr build_image --context "$SCRATCH/ctx"
	assert_failure 65
	[[ $stderr == *'sandbox.image'* ]]
}

@test "build-image: BuildKit's plain progress and the legacy builder's steps are both followed" {
	stub_tools
	cat >"$SCRATCH/buildkit.out" <<'EOF'
#1 [internal] load build definition from Dockerfile
#1 transferring dockerfile: 120B done
#1 DONE 0.0s

#2 [internal] load metadata for docker.io/library/ubuntu:24.04
#2 DONE 0.4s

#3 [1/3] FROM docker.io/library/ubuntu:24.04@sha256:abc
#3 CACHED

#4 [2/3] RUN apt-get update
#4 0.211 Get:1 http://archive.ubuntu.com/ubuntu noble InRelease
#4 [2/3] RUN apt-get update
#4 3.100 Reading package lists...
#4 DONE 3.2s

#5 [3/3] COPY forge-dockerd-start forge-cache-prune /usr/local/bin/
#5 DONE 0.1s

#6 exporting to image
#6 exporting layers 0.3s done
#6 DONE 0.4s
EOF
	STUB_BUILD_OUTPUT=$SCRATCH/buildkit.out run --separate-stderr build_image --tag t:1 --context "$SCRATCH/ctx"
	assert_success
	run sed -n 's/^forge-sandbox: [0-9:]* +[0-9:]* //p' <<<"$stderr"
	assert_output "docker build -t t:1 $SCRATCH/ctx
[internal] load build definition from Dockerfile
[internal] load metadata for docker.io/library/ubuntu:24.04
[1/3] FROM docker.io/library/ubuntu:24.04@sha256:abc
[2/3] RUN apt-get update
[3/3] COPY forge-dockerd-start forge-cache-prune /usr/local/bin/
exporting to image
docker save t:1
msb load --tag t:1"
	cat >"$SCRATCH/legacy.out" <<'EOF'
Sending build context to Docker daemon  3.072kB
Step 1/3 : FROM ubuntu:24.04
 ---> 35a88802559d
Step 2/3 : RUN apt-get update
 ---> Running in 0a1b2c3d
Get:1 http://archive.ubuntu.com/ubuntu noble InRelease
Step 3/3 : USER agent
 ---> Running in 4e5f6a7b
Successfully tagged t:1
EOF
	STUB_BUILD_OUTPUT=$SCRATCH/legacy.out run --separate-stderr build_image --tag t:1 --context "$SCRATCH/ctx"
	assert_success
	run sed -n 's/^forge-sandbox: [0-9:]* +[0-9:]* \[/[/p' <<<"$stderr"
	assert_output "[1/3] FROM ubuntu:24.04
[2/3] RUN apt-get update
[3/3] USER agent"
}

@test "build-image: on a terminal with TERM=dumb, timestamped lines instead" {
	command -v script >/dev/null || unavailable "no script(1) (util-linux)"
	stub_tools
	TERM=dumb run script -qec "$SCRATCH/build-image --tag t:1 --context $SCRATCH/ctx" /dev/null </dev/null
	assert_success
	[[ $output != *$'\e'* ]]
	[[ $output =~ forge-sandbox:\ [0-9]{2}:[0-9]{2}:[0-9]{2}\ \+[0-9]+:[0-9]{2}\ docker\ save\ t:1 ]]
}

@test "build-image: the failing command's last lines are shown after '| ', escape sequences escaped" {
	stub_tools
	STUB_SAVE_FAIL=1 STUB_SAVE_ESC=1 run --separate-stderr build_image --tag t:1 --context "$SCRATCH/ctx"
	assert_failure 1
	[[ $stderr != *$'\e'* ]]
	[[ $stderr == *$'\n''| Verdict: PASS^[[8m' ]]
}

@test "build-image: docker save or msb load failing: exit 1, their last lines, the tar removed" {
	stub_tools
	STUB_SAVE_FAIL=1 run --separate-stderr build_image --tag t:1 --context "$SCRATCH/ctx"
	assert_failure 1
	[[ $stderr == *'forge-sandbox: error: docker save failed (exit 1); the last 20 lines of its output:'$'\n''| save line 11'$'\n'* ]]
	[[ $stderr == *'| save line 30' ]]
	[ ! -e "$STUB_STATE/msb.argv" ]
	no_leftovers
	STUB_MSB_FAIL=1 run --separate-stderr build_image --tag t:1 --context "$SCRATCH/ctx"
	assert_failure 1
	[[ $stderr == *'forge-sandbox: error: msb load failed (exit 1); the last 20 lines of its output:'$'\n''| error: cache error: stub load failure' ]]
	[ -s "$STUB_STATE/msb.saw-tar" ]
	no_leftovers
}

@test "build-image: INT, TERM or HUP during msb load: exit 128+n, the tar removed" {
	stub_tools
	local sig num pid status tar
	for sig in INT TERM HUP; do
		num=$(kill -l "$sig")
		rm -f "$STUB_STATE/msb.saw-tar"
		# perl gives the build a default INT (a background job's is ignored).
		STUB_MSB_SLEEP=30 setsid perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die' \
			"$SCRATCH/build-image" --tag t:1 --context "$SCRATCH/ctx" >"$SCRATCH/out" 2>"$SCRATCH/err" 3>&- &
		pid=$!
		wait_for "$STUB_STATE/msb.argv" load
		for _ in $(seq 1 100); do [ -s "$STUB_STATE/msb.saw-tar" ] && break; sleep 0.1; done
		tar=$(cat "$STUB_STATE/msb.saw-tar")
		[ -f "$tar" ]
		rm "$STUB_STATE/msb.argv"
		status=0
		kill -s "$sig" -- "-$pid"
		wait "$pid" || status=$?
		[ "$status" -eq $((128 + num)) ] || fail "$sig: exit $status, expected $((128 + num)): $(cat "$SCRATCH/err")"
		wait_gone "$tar"
		[ ! -e "$tar" ] || fail "$sig: the tar is left"
		no_leftovers
	done
}

@test "build-image: docker missing, msb missing, the daemon not answering: 69 naming the tool" {
	stub_tools
	run --separate-stderr env PATH="$(path_without "$SCRATCH/no-docker" docker)" \
		"$SCRATCH/build-image" --tag t:1 --context "$SCRATCH/ctx"
	assert_failure 69
	[[ $stderr == *"required program 'docker' not found"* ]]
	mkdir -p "$SCRATCH/docker-only"
	ln -s "$SCRATCH/stubs/docker" "$SCRATCH/docker-only/docker"
	run --separate-stderr env PATH="$(path_without "$SCRATCH/no-msb" docker msb):$SCRATCH/docker-only" \
		"$SCRATCH/build-image" --tag t:1 --context "$SCRATCH/ctx"
	assert_failure 69
	[[ $stderr == *"required program 'msb' not found"* ]]
	FORGE_MSB=$SCRATCH/nowhere/msb run --separate-stderr build_image --tag t:1 --context "$SCRATCH/ctx"
	assert_failure 69
	[[ $stderr == *"FORGE_MSB=$SCRATCH/nowhere/msb"* ]]
	STUB_INFO_FAIL=1 run --separate-stderr build_image --tag t:1 --context "$SCRATCH/ctx"
	assert_failure 69
	[[ $stderr == *'the Docker daemon is not answering (Cannot connect to the Docker daemon'* ]]
	[ ! -e "$STUB_STATE/msb.argv" ]
	run ! grep -q '^build' "$STUB_STATE/docker.argv"
	no_leftovers
}

@test "build-image: usage errors exit 64 and run nothing" {
	stub_tools
	run build_image --bogus
	assert_failure 64
	run build_image --tag
	assert_failure 64
	run build_image --tag -x --context "$SCRATCH/ctx"
	assert_failure 64
	run build_image --tag 'a b' --context "$SCRATCH/ctx"
	assert_failure 64
	run build_image --tag t:1 --context "$SCRATCH/none"
	assert_failure 64
	mkdir "$SCRATCH/empty"
	run --separate-stderr build_image --tag t:1 --context "$SCRATCH/empty"
	assert_failure 64
	[[ $stderr == *"--context $SCRATCH/empty: no Dockerfile in it"* ]]
	[ ! -e "$STUB_STATE/docker.argv" ]
}

@test "build-image: msb is found as every msb is (forge_msb_find): a FORGE_MSB that is not an absolute path is refused" {
	stub_tools
	FORGE_MSB=msb run --separate-stderr build_image --tag t:1 --context "$SCRATCH/ctx"
	assert_failure 69
	[[ $stderr == *"FORGE_MSB=msb is not an absolute path to an executable"* ]]
	[ ! -e "$STUB_STATE/msb.argv" ]
	FORGE_MSB=$SCRATCH/stubs/msb run --separate-stderr build_image --tag t:1 --context "$SCRATCH/ctx"
	assert_success
}

@test "build-image: one image-reference rule with the plan's: '+' (a digest algorithm's separator) passes, a leading '.', '-', ':', '/' or '@' does not" {
	stub_tools
	run --separate-stderr build_image --tag 'reg.example/img@sha256+b64u:abc' --context "$SCRATCH/ctx"
	assert_success
	grep -qx 'build -t reg.example/img@sha256+b64u:abc '"$SCRATCH/ctx" "$STUB_STATE/docker.argv"
	for bad in .x -x :x /x @x 'a b'; do
		run build_image --tag "$bad" --context "$SCRATCH/ctx"
		assert_failure 64
	done
}
